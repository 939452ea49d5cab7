"""The Celery workers as `make run` sees them (`RAG_EXECUTOR=celery`): which step each executes now,
asked of the workers themselves (Celery's `inspect().active()`), so that a worker lost with a step
is said (the step and the worker), and so is the step's new start on another worker; with no
worker left to take it, the step is failed once Redis would have given it back, and the run ends.
Before a run, `busy` names the steps of earlier runs of the data directory still on workers (a run
marked failed while a step of it ran on), which the next run waits for."""

from __future__ import annotations

import time
from dataclasses import dataclass

import dagster as dg

from rag_pipeline.defs.executors import VISIBILITY_MARGIN_S
from rag_pipeline.defs.runs import DATA_DIR_TAG, unfinished_steps
from rag_pipeline.settings import Settings

ASK_EVERY_S = 5.0
MISSED = 2  # answers a worker must miss, holding a step, before it counts as lost
STEP_ARGS = "execute_step_args_packed"  # dagster-celery's task argument: the run and its steps
WORKER_KEY = "Celery worker"  # the worker, in dagster-celery's event of a step it starts


@dataclass(frozen=True)
class Task:
    """A step of a run executed by a worker now."""

    worker: str
    task_id: str
    run_id: str
    step: str


def celery_app(settings: Settings):
    from celery import Celery

    return Celery(broker=settings.celery_broker, backend=settings.celery_backend)


def active(app, timeout: float = 2.0) -> tuple[set[str], list[Task]]:
    """The workers that answer within `timeout`, and the steps they execute now."""
    replies = app.control.inspect(timeout=timeout).active() or {}
    tasks = []
    for worker, running in replies.items():
        for task in running:
            args = (task.get("kwargs") or {}).get(STEP_ARGS) or {}
            for step in args.get("step_keys_to_execute") or []:
                tasks.append(Task(worker, task["id"], args.get("run_id", ""), step))
    return set(replies), tasks


def busy(app, instance: dg.DagsterInstance, name: str) -> list[str]:
    """A line for each step of a run on the data directory `name` that a worker still executes."""
    lines = []
    for task in active(app)[1]:
        run = instance.get_run_by_id(task.run_id)
        if run is not None and run.tags.get(DATA_DIR_TAG) == name:
            status = run.status.value.lower()
            lines.append(f"step {task.step} of run {task.run_id[:8]}… ({status}) still runs on {task.worker}")
    return lines


class Watch:
    """A run's steps on the workers, looked at every `ASK_EVERY_S` seconds (`look`): which worker
    started which step, from the run's log (dagster-celery's event names the worker), and which
    workers answer and with which task, asked of them."""

    def __init__(self, settings: Settings, instance: dg.DagsterInstance):
        self.app, self.instance = celery_app(settings), instance
        self.given_back_s = settings.celery_task_timeout + VISIBILITY_MARGIN_S  # Redis's visibility timeout
        self.held: dict[str, str] = {}  # step -> the worker that started it last
        self.tasks: dict[str, str] = {}  # step -> its Celery task, as a worker reported it
        self.missed: dict[str, int] = {}
        self.lost: dict[str, float] = {}  # step -> when it was found lost
        self.cursor, self.last = None, 0.0

    def look(self, run_id: str) -> list[str]:
        """What changed since the last look, a line each."""
        if time.monotonic() - self.last < ASK_EVERY_S:
            return []
        self.last = time.monotonic()
        lines = self.started(run_id)
        alive, tasks = active(self.app)
        self.tasks |= {t.step: t.task_id for t in tasks if t.run_id == run_id}
        unfinished = set(unfinished_steps(self.instance, run_id))
        for step, worker in list(self.held.items()):
            if step not in unfinished:
                del self.held[step]
            elif worker not in alive and step not in self.lost:
                self.missed[step] = self.missed.get(step, 0) + 1
                if self.missed[step] >= MISSED:
                    self.lost[step] = time.monotonic()
                    lines.append(self.lost_line(step, worker, alive))
        return lines + self.give_up(alive)

    def started(self, run_id: str) -> list[str]:
        """Learn from the run's log which worker started which step since the last look; a line for
        each lost step started again."""
        page = self.instance.get_records_for_run(
            run_id, cursor=self.cursor, of_type=dg.DagsterEventType.ENGINE_EVENT
        )
        self.cursor = page.cursor
        lines = []
        for record in page.records:
            entry = record.event_log_entry
            worker = entry.dagster_event.event_specific_data.metadata.get(WORKER_KEY)
            if worker is None or entry.step_key is None:
                continue
            if entry.step_key in self.lost:
                lines.append(f"  {entry.step_key}: runs again, on {worker.value}")
                del self.lost[entry.step_key]
            self.held[entry.step_key], self.missed[entry.step_key] = worker.value, 0
        return lines

    def lost_line(self, step: str, worker: str, alive: set[str]) -> str:
        where = f"{len(alive)} worker(s) answer" if alive else "no worker answers: start one (`make worker`)"
        return (
            f"  LOST  {step}: its worker {worker} stopped answering; Redis gives the step to another "
            f"worker within {self.given_back_s:.0f} s of its start (RAG_CELERY_TASK_TIMEOUT + "
            f"{VISIBILITY_MARGIN_S} s), and it runs again there; {where}"
        )

    def give_up(self, alive: set[str]) -> list[str]:
        """Fail the lost steps no worker can take any more: none answers, and Redis would have given
        them back by now. The run then ends as a step failure ends it; a later start of the task is
        refused by its worker (`runs.refusal`: the run has ended)."""
        from celery.exceptions import WorkerLostError

        if alive:
            return []
        lines = []
        for step, since in list(self.lost.items()):
            if time.monotonic() - since < self.given_back_s or step not in self.tasks:
                continue
            why = f"worker {self.held[step]} was lost with step {step}, and no worker took it again"
            self.app.control.revoke(self.tasks[step])
            self.app.backend.mark_as_failure(self.tasks[step], WorkerLostError(why))
            del self.lost[step], self.held[step]
            lines.append(f"  FAILED  {step}: {why} within {self.given_back_s:.0f} s; `make run` again")
        return lines
