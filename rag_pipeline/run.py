"""`python -m rag_pipeline.run`: what `make run` does. Observes the notes head and the questions file
and checks every asset's outputs (`automation.look`), evaluates the assets' automation conditions in
this process as the automation sensor would (`automation.requested`), and runs what they request as
one run of the `index_and_evaluate` job; again until nothing is requested. Nothing requested: nothing
runs. Before a run it prints the plan (`rag_pipeline.plan`); `--plan` prints only that. The run is
executed here, through the instance's storage but no run coordinator, so it needs no daemon and no
`dagster.yaml`. Exits 0 on success, 1 on a failed or refused run, 2 on a bad setting, 3
when only the release gate failed (the reports are fresh, the live index stays where it was)."""

from __future__ import annotations

import functools
import gc
import os
import re
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from rag_pipeline.lib.chunking import StrategyError
from rag_pipeline.lib.core import DirectoryLock
from rag_pipeline.lib.questions import QuestionsError
from rag_pipeline.lib.sources import NotesSourceError
from rag_pipeline.plan import plan_lines, progress_bar
from rag_pipeline.settings import SettingsError

if TYPE_CHECKING:
    from dagster._utils.error import SerializableErrorInfo

MAX_RUNS = 3  # a file that changes under a run makes it stale again once; more is a bug
REJECTED_EXIT = 3  # everything ran and was evaluated, and the release gate held the new index back
REQUEST_TAG = "rag/request"
EMBEDDED = re.compile(r"(\S+): embedded (\d+)/(\d+) texts \(([\d.]+) texts/s\)")  # progress_reporter's line


def due(
    defs: dg.Definitions, instance: dg.DagsterInstance, keep: bool = True
) -> tuple[str, dict[dg.AssetKey, list[str]]]:
    """The head observed, and the assets the conditions request now with their reasons (the
    evaluation's cursor kept unless `keep` is false, as for a plan)."""
    from rag_pipeline.defs.automation import look, requested
    from rag_pipeline.defs.sources import HEAD, observe

    r = defs.resources
    observed = observe(r["notes_repo"], r["questions_file"])
    look(defs, instance, observed)
    return observed[HEAD], requested(defs, instance, keep)


def pinned_config(notes_repo, commit: str) -> dict:
    """Run config that reads the notes at `commit`, the one observed (a resource's config is replaced
    whole)."""
    config = {
        "repo": notes_repo.repo,
        "ref": commit,
        "glob": notes_repo.glob,
        "exclude": list(notes_repo.exclude),
    }
    return {"resources": {"notes_repo": {"config": config}}}


def execute(job, instance: dg.DagsterInstance, keys, run_config: dict, tags: dict):
    """One run of `job` (a reconstructable job, or a job definition in tests) materializing `keys`."""
    if isinstance(job, dg.JobDefinition):
        return job.execute_in_process(
            instance=instance,
            asset_selection=list(keys),
            run_config=run_config,
            tags=tags,
            raise_on_error=False,
        )
    from dagster._core.execution.api import execute_run

    from rag_pipeline.defs.runs import workspace_origin

    # what `dg.execute_job` does, with the origin the UI needs to re-execute the run
    run = instance.create_run_for_job(
        job_def=job.get_definition(),
        run_config=run_config,
        tags=tags,
        asset_selection=frozenset(keys),
        job_code_origin=job.get_python_origin(),
        remote_job_origin=workspace_origin(job.get_definition().name),
    )
    return execute_run(job, run, instance).dagster_run


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
    """What the terminal shows of a run: the assets done, a few to a line; the embedder's progress
    (on a terminal, `tty`, one bar redrawn in place with the time left; else the log's lines); warnings
    and failures. `verbose` shows every event of the run's log instead."""

    def __init__(self, echo=None, verbose: bool = False, every_s: float = 10.0, tty: bool = False):
        echo = echo or functools.partial(print, flush=True)  # flushed: a bar has no newline to flush it
        self.echo, self.verbose, self.every_s, self.tty = echo, verbose, every_s, tty
        self.bar = False  # a progress bar is drawn on the last line, without its newline yet
        self.done: list[str] = []
        self.failed: list[str] = []
        self.refused = False  # another run held the data directory
        self.reused = 0
        self.last = time.monotonic()

    def see(self, entry) -> None:
        event = entry.dagster_event
        if self.verbose:
            self.echo(f"  {entry.level}  {entry.step_key or ''}  {entry.message or entry.user_message}")
            return
        if event is None:
            message = entry.user_message or ""
            if self.tty and (progress := EMBEDDED.match(message)):
                self.draw(*progress.groups())
            elif message and (entry.level >= 30 or "embedded" in message):
                self.show(f"  {message.splitlines()[0][:160]}")
        elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
            data = event.event_specific_data.materialization
            if "reused" in data.metadata:
                self.reused += 1
            else:
                self.done.append(data.asset_key.to_user_string())
        elif event.event_type == dg.DagsterEventType.STEP_FAILURE:
            error = event.event_specific_data.error
            message = user_message(error) if error else "failed"
            own = error.cause if error and error.cause else error  # the step's own exception
            self.refused = self.refused or (own is not None and own.cls_name == "DataDirectoryBusy")
            self.failed.append(event.step_key)
            self.show(f"  FAILED  {event.step_key}: {message}")

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
        due = len(self.done) >= 6 or time.monotonic() - self.last >= self.every_s
        if (self.done or self.reused) and (force or due):
            reused = f" ({self.reused} unchanged, reused)" if self.reused else ""
            self.show(f"  done: {', '.join(self.done) or '-'}{reused}")
            self.done, self.reused, self.last = [], 0, time.monotonic()


def follow(instance: dg.DagsterInstance, request: str, progress: Progress, done: threading.Event) -> None:
    """Show the progress of the run tagged `request` until `done` is set."""
    run_id, cursor = None, None
    while True:
        finished = done.is_set()
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
        progress.flush(force=finished)
        if finished:
            return
        done.wait(0.5)


def run_shown(job, instance: dg.DagsterInstance, keys, run_config: dict, progress: Progress) -> dg.DagsterRun:
    """`execute` here, its progress shown from another thread as the run's log grows."""
    request, done = str(uuid.uuid4()), threading.Event()
    shower = threading.Thread(target=follow, args=(instance, request, progress, done), daemon=True)
    shower.start()
    try:
        run = execute(job, instance, keys, run_config, {REQUEST_TAG: request})
    finally:
        done.set()
        shower.join()
    return run if isinstance(run, dg.DagsterRun) else run.dagster_run


def wait_for_others(instance: dg.DagsterInstance, name: str) -> bool:
    """Wait while another run writes the data directory `name`; whether one did."""
    from rag_pipeline.defs.runs import ACTIVE, DATA_DIR_TAG, busy_message

    waited = False
    while busy := instance.get_runs(dg.RunsFilter(tags={DATA_DIR_TAG: name}, statuses=ACTIVE), limit=1):
        if not waited:
            print(f"waiting: {busy_message(name, busy[0].run_id)}")
        waited = True
        time.sleep(1.0)
    return waited


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


def main(argv: list[str] | None = None) -> int:
    """`-v` (or RAG_VERBOSE=1) prints every event of the run's log, DEBUG ones included; `--plan`
    prints what would run and runs nothing; `--report` (`make run`) then prints the report, as
    `python -m rag_pipeline.show_report` does, in this process: its imports are loaded already."""
    args = argv if argv is not None else sys.argv[1:]
    code = run(args)
    if "--report" in args and "--plan" not in args and code in (0, REJECTED_EXIT):
        from rag_pipeline import show_report

        show_report.main(verified=True)  # `look` checked the served tables; the exit status stays the run's
    return code


def run(args: list[str]) -> int:
    """Plan, and run what is stale until nothing is (see `main`); the exit status."""
    sys.stdout.reconfigure(line_buffering=True)  # progress shows as it comes, in a pipe too
    verbose = "-v" in args or os.environ.get("RAG_VERBOSE") == "1"
    try:
        from rag_pipeline.definitions import defs, reconstructable_job, settings
        from rag_pipeline.lib.chunking import load_strategies

        strategies = load_strategies(settings.strategies or None, settings.strategy_file or None)
    except (SettingsError, StrategyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from rag_pipeline.defs.runs import data_dir_name

    # every process of the run (a step's, under the multiprocess executor) reads the same files
    os.environ.update(settings.path_variables())
    name = data_dir_name(settings.data_dir)
    with open_instance() as instance:
        # the modules are imported and live as long as the process: the collector need not walk
        # their objects again (those walks were half of a no-op `make run`)
        gc.freeze()
        for _ in range(MAX_RUNS):
            try:
                head, wanted = due(defs, instance, keep="--plan" not in args)
                print("\n".join(plan_lines(defs, instance, head, wanted, strategies)))
            except (NotesSourceError, QuestionsError) as exc:  # the repository, ref or questions file set
                print(f"error: {exc}", file=sys.stderr)
                return 2
            if not wanted or "--plan" in args:
                return 0
            if wait_for_others(instance, name):
                continue  # what they wrote changes what is requested
            progress = Progress(verbose=verbose, tty=sys.stdout.isatty())
            # the run's log is shown by `Progress`, not by Dagster's console logger too
            quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
            config = pinned_config(defs.resources["notes_repo"], head) | quiet
            run = run_shown(dg.reconstructable(reconstructable_job), instance, list(wanted), config, progress)
            print(f"run {run.run_id}: {run.status.value.lower()}")
            if progress.refused:  # started at the same moment as another: it goes first
                wait_for_others(instance, name)
                continue
            if run.status != dg.DagsterRunStatus.SUCCESS:
                return REJECTED_EXIT if progress.failed == ["release"] else 1
    print(f"still stale after {MAX_RUNS} runs", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
