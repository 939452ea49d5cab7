"""The Celery workers as `make run` sees them (`RAG_EXECUTOR=celery`): which step each executes now,
asked of the workers themselves (Celery's `inspect().active()`), so that a worker lost with a step
is said (the step and the worker), and so is the step's new start on another worker; with no
worker answering for as long as Redis would take to give a lost step back, the run's steps out on
workers are failed, and the run ends. A broker that stops answering is said in one line.
Before a run, `busy` names the steps of earlier runs of the data directory still on workers (a run
marked failed while a step of it ran on), which the next run waits for."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

import dagster as dg
from celery.signals import after_task_publish

from rag_pipeline.defs.platform.executors import VISIBILITY_MARGIN_S, unreachable_line
from rag_pipeline.defs.platform.runs import DATA_DIR_TAG, ended_steps
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


def step_args(kwargs) -> object | None:
    """dagster-celery's arguments of a step task (its run id, steps and instance), from the task's
    keyword arguments; None for another task."""
    packed = kwargs.get(STEP_ARGS) if isinstance(kwargs, dict) else None
    return dg.deserialize_value(json.dumps(packed)) if packed else None


def active(app, timeout: float = 2.0) -> tuple[set[str], list[Task]]:
    """The workers that answer within `timeout`, and the steps they execute now."""
    replies = app.control.inspect(timeout=timeout).active() or {}
    tasks = []
    for worker, running in replies.items():
        for task in running:
            if (args := step_args(task.get("kwargs"))) is not None:
                tasks += [
                    Task(worker, task["id"], args.run_id, step) for step in args.step_keys_to_execute or []
                ]
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
    started which step, from the run's log (dagster-celery's event names the worker); which workers
    answer, asked of them; which task carries which step, as this process publishes them (Celery's
    `after_task_publish` signal: the run executes here)."""

    def __init__(self, settings: Settings, instance: dg.DagsterInstance):
        self.app, self.instance = celery_app(settings), instance
        self.broker = settings.celery_broker
        self.given_back_s = settings.celery_task_timeout + VISIBILITY_MARGIN_S  # Redis's visibility timeout
        self.held: dict[str, str] = {}  # step -> the worker that started it last
        self.tasks: dict[tuple[str, str], str] = {}  # (run, step) -> its Celery task, as published
        self.missed: dict[str, int] = {}
        self.lost: set[str] = set()
        self.nobody_since: float | None = None  # since when no worker answers
        self.unreachable = False  # the broker did not answer the last look
        self.cursor, self.last = None, 0.0
        after_task_publish.connect(self.published)  # weakly: the signal is gone with the watch

    def published(self, headers: dict | None = None, body=None, **_) -> None:
        """Celery's `after_task_publish`: remember the task of each step of a run."""
        args = step_args(body[1]) if isinstance(body, tuple | list) and len(body) > 1 else None
        if headers and args is not None:
            for step in args.step_keys_to_execute or []:
                self.tasks[(args.run_id, step)] = headers["id"]

    def look(self, run_id: str) -> list[str]:
        """What changed since the last look, a line each."""
        if time.monotonic() - self.last < ASK_EVERY_S:
            return []
        self.last = time.monotonic()
        lines = self.started(run_id)
        try:
            alive, _ = active(self.app)
        except Exception as exc:  # kombu's or redis's: the broker does not answer
            if self.unreachable:
                return lines
            self.unreachable = True
            return [*lines, f"  {unreachable_line('RAG_CELERY_BROKER', self.broker, exc)}"]
        if self.unreachable:
            self.unreachable = False
            lines.append(f"  RAG_CELERY_BROKER={self.broker} answers again")
        ended = ended_steps(self.instance, run_id)  # not yet started counts: a step builds its job first
        for step, worker in list(self.held.items()):
            if step in ended:
                del self.held[step]
            elif worker not in alive and step not in self.lost:
                self.missed[step] = self.missed.get(step, 0) + 1
                if self.missed[step] >= MISSED:
                    self.lost.add(step)
                    lines.append(self.lost_line(step, worker, alive))
        return lines + self.nobody(run_id, alive)

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
                self.lost.discard(entry.step_key)
            self.held[entry.step_key], self.missed[entry.step_key] = worker.value, 0
        return lines

    def lost_line(self, step: str, worker: str, alive: set[str]) -> str:
        where = (
            f"{len(alive)} worker(s) answer"
            if alive
            else f"no worker answers: start one (`make worker`) within {self.given_back_s:.0f} s"
        )
        return (
            f"  LOST  {step}: its worker {worker} stopped answering; Redis gives the step to another "
            f"worker within {self.given_back_s:.0f} s of its start (RAG_CELERY_TASK_TIMEOUT + "
            f"{VISIBILITY_MARGIN_S} s), and it runs again there; {where}"
        )

    def nobody(self, run_id: str, alive: set[str]) -> list[str]:
        """Once no worker has answered for as long as Redis takes to give a lost task back (the
        task timeout + `VISIBILITY_MARGIN_S`), fail the run's steps still out on workers: none is
        there to run them. Their tasks are revoked and marked failed, so the run's executor ends
        the run as a worker's failure ends it; a worker that takes such a task later refuses it
        (`celery_app`: the run has ended)."""
        from celery.exceptions import WorkerLostError

        if alive:
            self.nobody_since = None
            return []
        now = time.monotonic()
        if self.nobody_since is None:
            self.nobody_since = now
        if now - self.nobody_since < self.given_back_s:
            return []
        for (run, step), task_id in list(self.tasks.items()):
            if run != run_id or self.app.AsyncResult(task_id).ready():
                continue
            was = f"worker {self.held[step]} was lost with it, and " if step in self.held else ""
            why = (
                f"{was}no worker answers for {self.given_back_s:.0f} s (RAG_CELERY_TASK_TIMEOUT + "
                f"{VISIBILITY_MARGIN_S} s): start a worker (`make worker`), then `make run` again"
            )
            self.app.control.revoke(task_id)
            self.app.backend.mark_as_failure(task_id, WorkerLostError(why))  # the run's failure says it
            del self.tasks[(run, step)]
        return []


def quiet_lost_results(unraisable) -> None:
    """`sys.unraisablehook` while a Celery run executes here: once Redis stopped, each of Celery's
    results fails again in its finalizer (`AsyncResult.__del__`), a traceback each; the run's
    failure and `make run`'s last line say it once. Anything else is reported as usual."""
    if getattr(unraisable.object, "__qualname__", "") != "AsyncResult.__del__":
        sys.__unraisablehook__(unraisable)
