"""`python -m rag_pipeline.run`: what `make run` does. Plans as the sensor does (observe the notes head
and the questions file, find what is stale), then launches one run of the `index_and_evaluate` job
with the stale assets and all downstream of them, through `dagster job launch`, so the run is a run
of the job as the UI knows it (its page, the timeline). Nothing stale: nothing runs. Exits 0 on success,
1 on a failed run, 2 on a bad setting, 3 when only the release gate failed (the reports are fresh,
the live index stays where it was)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from rag_pipeline.lib.chunking import StrategyError
from rag_pipeline.lib.core import DirectoryLock
from rag_pipeline.lib.questions import QuestionsError
from rag_pipeline.lib.sources import NotesSourceError
from rag_pipeline.settings import PROJECT_ROOT, SettingsError

if TYPE_CHECKING:
    from dagster._utils.error import SerializableErrorInfo

MAX_RUNS = 3  # a file that changes under a run makes it stale again once; more is a bug
REJECTED_EXIT = 3  # everything ran and was evaluated, and the release gate held the new index back
QUEUED_PATIENCE_S = 30
WORKSPACE = PROJECT_ROOT / "workspace.yaml"


def launch(job: str, request: dg.RunRequest, env: dict[str, str]) -> str:
    """Start the planned run through Dagster's run launcher, with `env` over this process's
    environment; returns its run id."""
    run_id = str(uuid.uuid4())
    command = [sys.executable, "-m", "dagster", "job", "launch", "-w", str(WORKSPACE), "-j", job]
    command += ["--run-id", run_id, "--config-json", json.dumps(request.run_config)]
    command += [
        "--tags",
        json.dumps(request.tags),
        "-o",
        ",".join(k.to_user_string() for k in request.asset_selection),
    ]
    done = subprocess.run(command, cwd=PROJECT_ROOT, env=os.environ | env, capture_output=True, text=True)
    if done.returncode:
        lines = [line for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
        raise RuntimeError(f"dagster job launch failed: {lines[-1] if lines else done.returncode}")
    return run_id


def user_message(error: SerializableErrorInfo) -> str:
    """The line a user acts on: the first error in the cause chain that is not Dagster's wrapper of
    the step (`Error occurred while executing op ...`), its first line, without the module path of
    the project's own exception classes."""
    while error.cause is not None and error.message.startswith("dagster."):
        error = error.cause
    lines = error.message.strip().splitlines()
    first = lines[0] if lines else error.cls_name or "failed"
    qualified, colon, rest = first.partition(": ")
    own = qualified.startswith("rag_pipeline.") and qualified.endswith(f".{error.cls_name}")
    return rest if colon and own else first


class Progress:
    """What the terminal shows of a run: the assets done, a few to a line; the embedder's progress;
    warnings and failures. `verbose` shows every event of the run's log instead."""

    def __init__(self, echo=print, verbose: bool = False, every_s: float = 10.0):
        self.echo, self.verbose, self.every_s = echo, verbose, every_s
        self.done: list[str] = []
        self.failed: list[str] = []
        self.reused = 0
        self.last = time.monotonic()

    def see(self, entry) -> None:
        event = entry.dagster_event
        if self.verbose:
            self.echo(f"  {entry.level}  {entry.step_key or ''}  {entry.message or entry.user_message}")
            return
        if event is None:
            message = entry.user_message or ""
            if message and (entry.level >= 30 or "embedded" in message):
                self.echo(f"  {message.splitlines()[0][:160]}")
        elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
            data = event.event_specific_data.materialization
            if "reused" in data.metadata:
                self.reused += 1
            else:
                self.done.append(data.asset_key.to_user_string())
        elif event.event_type == dg.DagsterEventType.STEP_FAILURE:
            error = event.event_specific_data.error
            message = user_message(error) if error else "failed"
            self.failed.append(event.step_key)
            self.echo(f"  FAILED  {event.step_key}: {message}")

    def flush(self, force: bool = False) -> None:
        due = len(self.done) >= 6 or time.monotonic() - self.last >= self.every_s
        if (self.done or self.reused) and (force or due):
            reused = f" ({self.reused} unchanged, reused)" if self.reused else ""
            self.echo(f"  done: {', '.join(self.done) or '-'}{reused}")
            self.done, self.reused, self.last = [], 0, time.monotonic()


def follow(instance: dg.DagsterInstance, run_id: str, progress: Progress) -> dg.DagsterRun:
    """Wait for the run, showing its progress."""
    seen = 0
    started = time.monotonic()
    while True:
        run = instance.get_run_by_id(run_id)
        records = instance.all_logs(run_id)
        for entry in records[seen:]:
            progress.see(entry)
        seen = len(records)
        progress.flush(force=run is not None and run.is_finished)
        if run is not None and run.is_finished:
            return run
        queued = run is not None and run.status == dg.DagsterRunStatus.QUEUED
        if queued and time.monotonic() - started > QUEUED_PATIENCE_S:
            raise RuntimeError(
                f"run {run_id} is still queued after {QUEUED_PATIENCE_S} s: this instance queues runs "
                "and no dagster-daemon takes them; start `make dev`, or set `run_coordinator` to "
                "DefaultRunCoordinator in $DAGSTER_HOME/dagster.yaml"
            )
        time.sleep(0.5)


def open_instance() -> dg.DagsterInstance:
    """`DAGSTER_HOME`'s instance; two processes creating a fresh one at once would race on its
    sqlite tables, so the creation is done under a lock."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        return dg.DagsterInstance.get()  # Dagster's own message says what to set
    lock = DirectoryLock(Path(home) / ".rag-instance.lock", "instance set-up")
    lock.acquire()
    try:
        return dg.DagsterInstance.get()
    finally:
        lock.release()


def stale_summary(stale: dict[dg.AssetKey, str], shown: int = 4) -> str:
    """Why the assets are stale, grouped by reason, a few names each."""
    by_reason: dict[str, list[str]] = {}
    for key, why in stale.items():
        by_reason.setdefault(why, []).append(key.to_user_string())
    parts = []
    for why, names in by_reason.items():
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        parts.append(f"{', '.join(names[:shown])}{more} ({why})")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """`-v` (or RAG_VERBOSE=1) prints every event of the run's log, DEBUG ones included."""
    sys.stdout.reconfigure(line_buffering=True)  # progress shows as it comes, in a pipe too
    verbose = "-v" in (argv if argv is not None else sys.argv[1:]) or os.environ.get("RAG_VERBOSE") == "1"
    try:
        from rag_pipeline.definitions import JOB, defs, settings
    except (SettingsError, StrategyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from rag_pipeline.defs.planner import next_run

    r = defs.resources
    with open_instance() as instance:
        for _ in range(MAX_RUNS):
            graph = defs.resolve_asset_graph()
            try:
                found, request = next_run(graph, instance, r["notes_repo"], r["questions_file"])
            except (NotesSourceError, QuestionsError) as exc:  # the repository, ref or questions file set
                print(f"error: {exc}", file=sys.stderr)
                return 2
            if request is None:
                print(f"nothing is stale at {found.head[:12]}: every asset is fresh")
                return 0
            print(f"stale at {found.head[:12]}: {stale_summary(found.stale)}")
            progress = Progress(verbose=verbose)
            run = follow(instance, launch(JOB, request, settings.path_variables()), progress)
            print(f"run {run.run_id}: {run.status.value.lower()}")
            if run.status != dg.DagsterRunStatus.SUCCESS:
                return REJECTED_EXIT if progress.failed == ["release"] else 1
    print(f"still stale after {MAX_RUNS} runs", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
