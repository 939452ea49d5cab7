"""What the terminal shows while `make run`'s run runs, read from the run's log as it grows: the
assets done, the embedder's progress bar, and each failure's real cause in one line: a step's own,
a resource's that could not be set up (a refusal: the run's settings are not this process's), or a
worker's that refused or lost a step (dagster-celery reports those only in the run's failure)."""

from __future__ import annotations

import functools
import logging
import re
import threading
import time
from collections.abc import Callable

import dagster as dg

from rag_pipeline.cli.plan import progress_bar

REQUEST_TAG = "rag/request"  # the tag by which `follow` finds the run `make run` asked for
EMBEDDED = re.compile(r"(\S+): embedded (\d+)/(\d+) texts \(([\d.]+) texts/s\)")  # progress_reporter's line


GATE = "release_gate"  # the release's blocking check: its failure alone is a rejection (exit 3)
CHECK_FAILED = "DagsterAssetCheckFailedError"
NOT_EXECUTED = "Dependencies for step "  # Dagster's line for each step below a failed one
# Dagster's line for a step whose worker returned no outcome: the run's failure says why, at its end
NO_OUTCOME = re.compile(r"Step (\S+) finished without success or failure event")
WORKER_ERROR = re.compile(r"^\[([^\]\s]+)\]: (\S+?): (.*)$", re.M)  # dagster-celery's `[step]: cls: message`
PROBLEM_KEYS = ("why", "problems", "reasons", "reason", "decision")  # what a check's metadata says first


def user_message(error) -> str:
    """The line a user acts on (`error`: Dagster's serializable error info): the first error in the cause chain that is not Dagster's wrapper of
    the step (`Error occurred while executing op ...`), its first line, without the module path of
    the project's own exception classes."""
    while error.cause is not None and error.message.startswith("dagster."):
        error = error.cause
    lines = error.message.strip().splitlines()
    first = lines[0] if lines else error.cls_name or "failed"
    qualified, colon, rest = first.partition(": ")
    own = qualified.startswith("rag_pipeline.") and qualified.endswith(f".{error.cls_name}")
    return rest if colon and own else first


# the errors of Celery tasks whose message says it all: a refusal (`cli.celery_app`, whose class Celery
# rebuilds under a module of its own), a lost worker (`cli.workers`); or a line in place of Celery's
WORKER_ERRORS = {
    "StepRefused": None,
    "WorkerLostError": None,
    "TimeLimitExceeded": "ran past RAG_CELERY_TASK_TIMEOUT, and its worker stopped it: raise the "
    "timeout, or split the step's work (RAG_SHARDS)",
}


def worker_errors(error) -> list[tuple[str, str]]:
    """The steps that failed on Celery workers without an outcome of their own (refused, lost, run
    too long, the job not built), with each one's line, from the run's failure `error`:
    dagster-celery lists them as `[step]: module.Class: message`."""
    found = []
    for step, qualified, rest in WORKER_ERROR.findall(error.message if error is not None else ""):
        name = qualified.rsplit(".", 1)[-1]
        if name in WORKER_ERRORS:
            found.append((step, WORKER_ERRORS[name] or rest))
        else:
            found.append((step, rest if qualified.startswith("rag_pipeline.") else f"{name}: {rest}"))
    return found


class Progress:
    """What the terminal shows of a run: the assets done, a few to a line; the embedder's progress
    (on a terminal, `tty`, one bar redrawn in place with the time left; else the log's lines); warnings
    and failures. `verbose` shows every event of the run's log instead."""

    def __init__(
        self, echo=None, verbose: bool = False, every_s: float = 10.0, tty: bool = False, planned=frozenset()
    ):
        """`planned`: the names of the assets the run builds, as its plan counted them."""
        echo = echo or functools.partial(print, flush=True)  # flushed: a bar has no newline to flush it
        self.planned = frozenset(planned)
        self.echo, self.verbose, self.every_s, self.tty = echo, verbose, every_s, tty
        self.bar = False  # a progress bar is drawn on the last line, without its newline yet
        self.done: list[str] = []
        self.failed: list[str] = []
        self.checks_failed: dict[str, list[tuple[str, str]]] = {}  # asset -> (check, problem)
        self.not_run: set[str] = set()  # steps below a failed one
        self.no_outcome: list[str] = []  # steps a worker returned nothing for, until the run says why
        self.reused = 0
        self.last = time.monotonic()

    def see(self, entry) -> None:
        """Take in one entry of the run's log; `verbose` changes what is shown of it, not what is
        kept (the failures, the checks that failed: the exit status)."""
        event = entry.dagster_event
        if self.verbose:
            self.echo(f"  {entry.level}  {entry.step_key or ''}  {entry.message or entry.user_message}")
        if event is None:
            message = entry.user_message or ""
            if message.startswith(NOT_EXECUTED) and entry.step_key:
                self.not_run.add(entry.step_key)
            elif found := NO_OUTCOME.match(message):
                self.no_outcome.append(found[1])
            elif self.verbose:
                pass
            elif self.tty and (progress := EMBEDDED.match(message)):
                self.draw(*progress.groups())
            elif message and (entry.level >= 30 or "embedded" in message):
                self.show(f"  {message.splitlines()[0]}")  # whole: a warning may name many notes
        elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
            data = event.event_specific_data.materialization
            if "reused" in data.metadata:
                self.reused += 1
            else:
                self.done.append(data.asset_key.to_user_string())
        elif event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION:
            check = event.event_specific_data
            if not check.passed and check.blocking:
                problem = next(
                    (str(check.metadata[k].value) for k in PROBLEM_KEYS if k in check.metadata), ""
                )
                problem = " ".join(problem.replace("- ", "").split()) or "no detail"
                self.checks_failed.setdefault(check.asset_key.to_user_string(), []).append(
                    (check.check_name, problem)
                )
        elif event.event_type == dg.DagsterEventType.STEP_FAILURE:
            error = event.event_specific_data.error
            message = user_message(error) if error else "failed"
            if error is not None and error.cls_name == CHECK_FAILED:
                checks = self.checks_failed.get(event.step_key, [])
                message = "; ".join(f"check {name} failed: {problem}" for name, problem in checks) or message
            self.fail(event.step_key, message)
        elif event.event_type == dg.DagsterEventType.RESOURCE_INIT_FAILURE:
            error = event.event_specific_data.error
            self.fail(event.step_key or "resources", user_message(error) if error else "failed")
        elif event.event_type == dg.DagsterEventType.RUN_FAILURE:
            error = event.event_specific_data.error if event.event_specific_data else None
            for step, message in worker_errors(error):
                self.fail(step, message)
            if error is not None and not self.failed:  # the run itself, no step (a lease on an object store)
                self.fail("run", user_message(error))

    def fail(self, step: str, message: str) -> None:
        """A failed step's line, once per step (a resource's failure is followed by the step's)."""
        if step in self.failed:
            return
        self.failed.append(step)
        if not self.verbose:
            self.show(f"  FAILED  {step}: {message}")

    def rejected(self) -> bool:
        """Whether the run failed only because the release gate held the new index back."""
        checks = self.checks_failed.get("release", [])
        return self.failed == ["release"] and bool(checks) and all(name == GATE for name, _ in checks)

    def show(self, line: str) -> None:
        """A line of its own, below a progress bar being drawn."""
        if self.bar:
            self.echo("")
            self.bar = False
        self.echo(line)

    def draw(self, step: str, done: str, total: str, rate: str) -> None:
        """A terminal's progress bar, redrawn in place (`\\r`) until the step's embedding is done."""
        elapsed = int(done) / float(rate) if float(rate) > 0 else 0.0
        self.echo(f"\r  {step} {progress_bar(int(done), int(total), elapsed)}\033[K", end="")
        self.bar = done != total
        if not self.bar:
            self.echo("")

    def flush(self, force: bool = False) -> None:
        if self.verbose:  # every event was shown already
            self.done, self.reused, self.not_run = [], 0, set()
            return
        due = len(self.done) >= 6 or time.monotonic() - self.last >= self.every_s
        if (self.done or self.reused) and (force or due):
            reused = f" ({self.reused} unchanged, reused)" if self.reused else ""
            self.show(f"  done: {', '.join(self.done) or '-'}{reused}")
            self.done, self.reused, self.last = [], 0, time.monotonic()
        if force:
            for step in (s for s in self.no_outcome if s not in self.failed):  # the run said not why
                self.fail(step, "its worker returned no outcome (see the run's log)")
            self.no_outcome = []
        if force and self.not_run:
            # the assets of the plan (a blocking check run apart is a step of its own, no asset)
            steps = self.not_run & self.planned if self.planned else self.not_run
            of = f" of the {len(self.planned)} assets" if self.planned else " step(s)"
            self.show(f"  {len(steps)}{of} did not run: they depend on the failed step(s)")
            self.not_run = set()


def follow(
    instance: dg.DagsterInstance,
    request: str,
    progress: Progress,
    done: threading.Event,
    watch: Callable[[str], list[str]] | None = None,
) -> None:
    """Show the progress of the run tagged `request` until `done` is set, and what `watch` says of
    the run's steps on workers (`workers.Watch.look`). An instance that stops answering (its
    Postgres stopped) is said once, and the progress goes on once it answers again."""
    run_id, cursor, problem = None, None, None
    while True:
        finished = done.is_set()
        try:
            if run_id is None:
                runs = instance.get_runs(dg.RunsFilter(tags={REQUEST_TAG: request}), limit=1)
                run_id = runs[0].run_id if runs else None
            while run_id is not None:  # only the entries new since the last look: the log grows long
                page = instance.get_records_for_run(run_id, cursor=cursor, limit=1000)
                for record in page.records:
                    progress.see(record.event_log_entry)
                cursor = page.cursor
                if not page.has_more:
                    break
            for line in watch(run_id) if watch is not None and run_id is not None and not finished else ():
                progress.show(line)
            if problem is not None:
                progress.show("  the Dagster instance answers again")
                problem = None
        except Exception as exc:  # the display outlives any failure to read (the database's driver's own)
            if problem is None:
                problem = instance_problem(instance, exc)
                progress.show(f"  {problem}")
        progress.flush(force=finished)
        if finished:
            return
        done.wait(0.5)


def instance_where(instance: dg.DagsterInstance) -> str:
    """Where the instance keeps its runs: its Postgres (the URL without a password), or DAGSTER_HOME."""
    from urllib.parse import urlsplit

    url = getattr(instance.run_storage, "postgres_url", None)
    if url:
        parts = urlsplit(url)
        user = f"{parts.username}@" if parts.username else ""
        return f"Postgres {parts.scheme}://{user}{parts.hostname}:{parts.port}{parts.path}"
    return f"DAGSTER_HOME={instance.root_directory}"


def instance_problem(instance: dg.DagsterInstance, exc: BaseException) -> str:
    """One line for an instance whose storage does not answer."""
    detail = " ".join(str(exc).split())[:120]
    return (
        f"the Dagster instance ({instance_where(instance)}) cannot be reached ({detail}): start it "
        "(`make services` starts Postgres on RAG_PG_PORT), then `make run` again"
    )


def instance_down(instance: dg.DagsterInstance) -> str | None:
    """`instance_problem` if the instance does not answer now, else None."""
    try:
        instance.get_runs(limit=1)
    except Exception as exc:  # the storage's driver's own errors (psycopg2, sqlite3, SQLAlchemy)
        return instance_problem(instance, exc)
    return None


def quiet_retries(record: logging.LogRecord) -> bool:
    """A filter of the root logger in `make run`: Dagster's storage logs each retry of a lost
    database connection, three lines every few seconds; `follow` says it once (`instance_problem`)."""
    return not record.getMessage().startswith("Retrying failed database connection")
