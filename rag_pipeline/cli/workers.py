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
    """A run's steps on the workers, asked every `ASK_EVERY_S` seconds (`look`)."""

    def __init__(self, settings: Settings, instance: dg.DagsterInstance):
        self.app, self.instance = celery_app(settings), instance
        self.given_back_s = settings.celery_task_timeout + VISIBILITY_MARGIN_S  # Redis's visibility timeout
        self.held: dict[str, Task] = {}  # step -> the task last seen executing it
        self.missed: dict[str, int] = {}
        self.lost: dict[str, tuple[Task, float]] = {}  # step -> (its task, when it was found lost)
        self.last = 0.0

    def look(self, run_id: str) -> list[str]:
        """What changed since the last look, a line each."""
        if time.monotonic() - self.last < ASK_EVERY_S:
            return []
        self.last = time.monotonic()
        alive, tasks = active(self.app)
        lines = []
        for task in (t for t in tasks if t.run_id == run_id):
            if task.step in self.lost and self.lost[task.step][0].worker != task.worker:
                lines.append(f"  {task.step}: runs again, on {task.worker}")
                del self.lost[task.step]
            self.held[task.step], self.missed[task.step] = task, 0
        unfinished = set(unfinished_steps(self.instance, run_id))
        for step, task in list(self.held.items()):
            if step not in unfinished:
                del self.held[step]
            elif task.worker not in alive and step not in self.lost:
                self.missed[step] += 1
                if self.missed[step] >= MISSED:
                    self.lost[step] = (task, time.monotonic())
                    lines.append(self.lost_line(task, alive))
        return lines + self.give_up(alive)

    def lost_line(self, task: Task, alive: set[str]) -> str:
        where = f"{len(alive)} worker(s) answer" if alive else "no worker answers: start one (`make worker`)"
        return (
            f"  LOST  {task.step}: its worker {task.worker} stopped answering; Redis gives the step to "
            f"another worker within {self.given_back_s:.0f} s (RAG_CELERY_TASK_TIMEOUT + "
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
        for step, (task, since) in list(self.lost.items()):
            if time.monotonic() - since < self.given_back_s:
                continue
            why = f"worker {task.worker} was lost with step {step}, and no worker took it again"
            self.app.control.revoke(task.task_id)
            self.app.backend.mark_as_failure(task.task_id, WorkerLostError(why))
            del self.lost[step], self.held[step]
            lines.append(f"  FAILED  {step}: {why} within {self.given_back_s:.0f} s; `make run` again")
        return lines
