"""`python -m rag_pipeline.run`: what `make run` does (`rag_pipeline/run.py` disables the collector
first). Observes the notes head and the questions file and checks every asset's outputs
(`automation.look`), evaluates the assets' automation conditions in this process as the automation
sensor would (`automation.requested`), and runs what they request as one run of the
`index_and_evaluate` job; again if a commit or a questions edit landed meanwhile. Nothing requested:
nothing runs. Before a run it prints the plan (`cli.plan`); `--plan` prints only that. The run is
executed here, through the instance's storage but no run coordinator, so it needs no daemon and no
`dagster.yaml`. Exits 0 on success, 1 on a failed or refused run, 2 on a bad setting, 3 when only the
release gate failed (the reports are fresh, the live index stays where it was)."""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
import uuid
from pathlib import Path

import dagster as dg

from rag_pipeline.cli.plan import plan_lines
from rag_pipeline.cli.progress import REQUEST_TAG, Progress, follow
from rag_pipeline.defs.sources import HEAD
from rag_pipeline.lib.chunking import StrategyError
from rag_pipeline.lib.core import DirectoryLock
from rag_pipeline.lib.questions import QuestionsError
from rag_pipeline.lib.sources import NotesSourceError
from rag_pipeline.settings import SettingsError

MAX_RUNS = 3  # a file that changes under a run makes it stale again once; more is a bug
REJECTED_EXIT = 3  # everything ran and was evaluated, and the release gate held the new index back


def sources(defs: dg.Definitions) -> dict[dg.AssetKey, str]:
    """The versions of the two sources now: the notes head and the questions file's sha256."""
    from rag_pipeline.defs.sources import observe

    return observe(defs.resources["notes_repo"], defs.resources["questions_file"])


def due(
    defs: dg.Definitions, instance: dg.DagsterInstance, keep: bool = True
) -> tuple[dict[dg.AssetKey, str], dict[dg.AssetKey, list[str]]]:
    """The sources observed (`sources`; the notes head under `HEAD`), and the assets the conditions
    request now with their reasons (the evaluation's cursor kept unless `keep` is false, as for a
    plan)."""
    from rag_pipeline.defs.automation import look, requested

    observed = sources(defs)
    look(defs, instance, observed)
    return observed, requested(defs, instance, keep)


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
        tags={**job.get_definition().run_tags, **tags},  # the job's tags, as in-process runs get them
        asset_selection=frozenset(keys),
        job_code_origin=job.get_python_origin(),
        remote_job_origin=workspace_origin(job.get_definition().name),
    )
    return execute_run(job, run, instance).dagster_run


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
        from rag_pipeline.cli import show_report

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
        # their objects again (docs/assets.md)
        gc.freeze()
        gc.enable()
        built = None  # the sources' versions the last run built from
        for _ in range(MAX_RUNS):
            try:
                # a run built what the conditions requested and all it reaches: only a commit or a
                # questions edit made meanwhile leaves anything stale (then they are evaluated again)
                if built is not None and sources(defs) == built:
                    return 0
                observed, wanted = due(defs, instance, keep="--plan" not in args)
                head = observed[HEAD]
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
            built = observed
    print(f"still stale after {MAX_RUNS} runs", file=sys.stderr)
    return 1
