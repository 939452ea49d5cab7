"""Re-index when the notes repository moves: a sensor on its branch and a nightly schedule.

Both plan as `make run` does (`planner.plan`): observe the branch head and the questions file, and
when anything is stale (a new commit, a questions edit, a setting, a missing output) request one
run of all that is stale and downstream of it, pinned to the head. The sensor waits while a run of
the job is going on; the next tick starts from what that run left fresh.
"""

import dagster as dg

from rag_pipeline.defs.planner import next_run
from rag_pipeline.defs.resources import NotesRepository, QuestionsFile

ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def job_running(instance: dg.DagsterInstance, job_name: str) -> bool:
    return bool(instance.get_run_records(dg.RunsFilter(job_name=job_name, statuses=ACTIVE), limit=1))


def reindex(
    context, notes_repo: NotesRepository, questions_file: QuestionsFile, branch: str
) -> dg.RunRequest | dg.SkipReason:
    """The run that brings everything up to date at `branch`'s head, or why none is needed."""
    pinned = notes_repo.model_copy(update={"ref": branch})
    found, request = next_run(context.repository_def.asset_graph, context.instance, pinned, questions_file)
    if request is None:
        return dg.SkipReason(f"{branch} is at {found.head[:12]}: everything is fresh")
    context.log.info("stale: " + "; ".join(f"{k.to_user_string()} ({why})" for k, why in found.stale.items()))
    return request


def build_automation(
    job_name: str, *, branch: str, cron: str, timezone: str, enabled: bool, interval_s: int = 60
) -> tuple[dg.SensorDefinition, dg.ScheduleDefinition]:
    status = dg.DefaultSensorStatus.RUNNING if enabled else dg.DefaultSensorStatus.STOPPED

    @dg.sensor(
        job_name=job_name,
        minimum_interval_seconds=interval_s,
        default_status=status,
        description=f"When `{branch}` of the notes repository moves, the questions file changes or an "
        "output goes stale, runs everything stale and downstream of it in one run.",
    )
    def notes_commit_sensor(
        context: dg.SensorEvaluationContext,
        notes_repo: NotesRepository,
        questions_file: QuestionsFile,
    ):
        if job_running(context.instance, job_name):
            return dg.SkipReason(f"a run of {job_name} is going on")
        return reindex(context, notes_repo, questions_file, branch)

    @dg.schedule(
        job_name=job_name,
        cron_schedule=cron,
        execution_timezone=timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING if enabled else dg.DefaultScheduleStatus.STOPPED,
        description=f"At `{cron}` ({timezone}), runs everything stale at `{branch}`'s head, as the sensor does.",
    )
    def nightly_reindex(
        context: dg.ScheduleEvaluationContext,
        notes_repo: NotesRepository,
        questions_file: QuestionsFile,
    ):
        return reindex(context, notes_repo, questions_file, branch)

    return notes_commit_sensor, nightly_reindex
