"""The Celery app of the project's workers (`make worker`: `dagster-celery worker start -A
rag_pipeline.cli.celery_app`): dagster-celery's own app (`dagster_celery.app`), whose step task first
asks whether this worker may run the step, before it rebuilds the run's job: the run has not ended,
and its settings, code and asset graph are this worker's (`runs.refusal`). A worker with another
`RAG_SHARDS` cannot even build the run's job (it has other assets), so the question is asked here and
not only by the resources (`DataStore`). A refusal fails the task with one line naming the worker and
what differs, both values; the launcher shows it (`cli.progress`) and nothing is written."""

from __future__ import annotations

import functools

import celery
import dagster as dg
from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_execute_job_task, create_resume_job_task, create_task

from rag_pipeline.cli.workers import step_args
from rag_pipeline.defs.platform.runs import ended, refusal
from rag_pipeline.settings import SettingsError


class StepRefused(SettingsError):
    """A worker refused a step of a run: the run has ended, or its settings, code or graph differ."""


@functools.cache
def own_tags() -> dict[str, str]:
    """The tags this worker's definitions give a run (its settings, code and graph), built once from
    its environment as dagster-celery's task builds the job."""
    from rag_pipeline.definitions import JOB, defs

    return dict(defs.resolve_job_def(JOB).tags)


def refused(kwargs: dict) -> str | None:
    """Why the step task with the keyword arguments `kwargs` must not run here; None when it may."""
    args = step_args(kwargs)
    with dg.DagsterInstance.from_ref(args.instance_ref) as instance:
        run = instance.get_run_by_id(args.run_id)
    if run is None:
        return None  # dagster-celery's task says so itself
    try:
        own = own_tags()
    except SettingsError as exc:  # this worker's own RAG_* variables are bad
        return str(exc)
    return ended(run) or refusal(run, own)


class CheckedStep(celery.Task):
    """dagster-celery's step task, asked first (`refused`)."""

    def __call__(self, *args, **kwargs):
        if (problem := refused(kwargs)) is not None:
            raise StepRefused(f"worker {self.request.hostname} refuses it: {problem}")
        return super().__call__(*args, **kwargs)


app = make_app()
execute_plan = create_task(app, base=CheckedStep)
execute_job = create_execute_job_task(app)
resume_job = create_resume_job_task(app)
