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

import functools
import gc
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable

import dagster as dg

from rag_pipeline.cli.instance import InstanceError
from rag_pipeline.cli.instance import home as instance_home
from rag_pipeline.cli.instance import make as make_instance
from rag_pipeline.cli.plan import plan_lines, run_in_progress, too_many_shards
from rag_pipeline.cli.progress import REQUEST_TAG, Progress, follow, instance_down, quiet_retries
from rag_pipeline.defs.sources import HEAD
from rag_pipeline.lib.chunking import StrategyError
from rag_pipeline.lib.core import StorageError
from rag_pipeline.lib.questions import QuestionsError
from rag_pipeline.lib.sources import NotesSourceError
from rag_pipeline.settings import SettingsError

MAX_RUNS = 3  # a file that changes under a run makes it stale again once; more is a bug
REJECTED_EXIT = 3  # everything ran and was evaluated, and the release gate held the new index back


def sources(defs: dg.Definitions, sync: bool = True) -> dict[dg.AssetKey, str]:
    """The versions of the two sources now: the notes head and the questions file's sha256 (`sync`:
    see `observe`)."""
    from rag_pipeline.defs.sources import observe

    return observe(defs.resources["notes_repo"], defs.resources["questions_file"], sync)


def due(
    defs: dg.Definitions, instance: dg.DagsterInstance, plan: bool = False
) -> tuple[dict[dg.AssetKey, str], dict[dg.AssetKey, list[str]]]:
    """The sources observed (`sources`; the notes head under `HEAD`), and the assets the conditions
    request now with their reasons: after recording what was observed and found broken (`look`), or
    for a `plan`, recording nothing, from the evaluation as it stands plus what those records would
    add (`foreseen`)."""
    from rag_pipeline.defs.platform.automation import foreseen, look, requested

    observed = sources(defs, sync=not plan)  # a plan commits no edit of data/corpus/: it says it would
    if plan:
        return observed, foreseen(defs, instance, observed)
    look(defs, instance, observed)
    return observed, requested(defs, instance)


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
    """One run of `job` materializing `keys`: a job definition in tests, executed here; a
    reconstructable job (`make run`), created first and started unless it gives way to a run created
    before it (`lease.gave_way`: then None)."""
    if isinstance(job, dg.JobDefinition):
        return job.execute_in_process(
            instance=instance,
            asset_selection=list(keys),
            run_config=run_config,
            tags=tags,
            raise_on_error=False,
        )
    from rag_pipeline.defs.platform.internals.launch import create_run, start_run
    from rag_pipeline.defs.platform.lease import gave_way
    from rag_pipeline.defs.platform.runs import DATA_DIR_TAG, here_tags

    run = create_run(instance, job, list(keys), run_config, tags | here_tags(), "rag_pipeline.definitions")
    return None if gave_way(instance, run, tags[DATA_DIR_TAG]) else start_run(instance, job, run)


def run_shown(
    job, instance: dg.DagsterInstance, keys, run_config: dict, tags: dict, progress: Progress, settings
):
    """`execute` here, its progress shown from another thread as the run's log grows, with what
    becomes of its steps on Celery workers (`workers.Watch`)."""
    request, done = str(uuid.uuid4()), threading.Event()
    watch = None
    if settings.executor == "celery":
        from rag_pipeline.cli.workers import Watch, quiet_lost_results

        watch = Watch(settings, instance).look
        sys.unraisablehook = quiet_lost_results
    shower = threading.Thread(target=follow, args=(instance, request, progress, done, watch), daemon=True)
    shower.start()
    try:
        run = execute(job, instance, keys, run_config, tags | {REQUEST_TAG: request})
    finally:
        done.set()
        shower.join()
    return run if run is None or isinstance(run, dg.DagsterRun) else run.dagster_run


def writers_elsewhere(settings, instance: dg.DagsterInstance, name: str) -> Callable[[], list[str]]:
    """What else may still write the data directory `name` once no active run of the instance does
    (`lease.wait_turn`'s `elsewhere`): the steps Celery workers still execute."""
    if settings.executor != "celery":
        return list
    from rag_pipeline.cli.workers import busy, celery_app

    return functools.partial(busy, celery_app(settings), instance, name)


def open_instance(plan: bool = False) -> dg.DagsterInstance:
    """`DAGSTER_HOME`'s instance, by default `make run`'s (`DEFAULT_DAGSTER_HOME`); a `plan` before
    it exists (no directory, or Dagster's default sqlite storage not made yet in it) reads an empty
    one in memory, creating nothing. Its storage is made once, under a lock (`cli.instance`);
    InstanceError when it is damaged."""
    home = instance_home()
    config = home / "dagster.yaml"
    own_storage = config.exists() and "storage" in config.read_text()  # Postgres, say
    if plan and not own_storage and not (home / "history" / "runs.db").exists():
        return dg.DagsterInstance.ephemeral()
    make_instance(home)  # made already, for a plan: opening it creates nothing
    return dg.DagsterInstance.get()


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
    logging.getLogger().addFilter(quiet_retries)
    verbose = "-v" in args or os.environ.get("RAG_VERBOSE") == "1"
    plan = "--plan" in args
    os.environ["RAG_RETRY_AFTER"] = "0"  # a user's `make run` retries a failed asset at once
    try:
        from rag_pipeline.definitions import defs, reconstructable_job, settings
        from rag_pipeline.lib.chunking import load_strategies

        strategies = load_strategies(settings.strategies or None, settings.strategy_file or None)
    except (SettingsError, StrategyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from rag_pipeline.defs.platform.executors import unreachable
    from rag_pipeline.defs.platform.lease import wait_turn
    from rag_pipeline.defs.platform.runs import DATA_DIR_TAG, data_dir_name

    if not plan and (problem := unreachable(settings)):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    # every process of the run (a step's, under the multiprocess executor) reads the same files
    os.environ.update(settings.path_variables())
    name = data_dir_name(settings.data_dir)
    try:
        opened = open_instance(plan="--plan" in args)
    except InstanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with opened as instance:
        # the modules are imported and live as long as the process: the collector need not walk
        # their objects again (docs/assets.md)
        gc.freeze()
        gc.enable()
        if plan and (busy := run_in_progress(instance, name)):
            print(f"error: {busy}", file=sys.stderr)
            return 2
        built = None  # the sources' versions the last run built from
        runs = 0
        while runs < MAX_RUNS:
            try:
                # a run built what the conditions requested and all it reaches: only a commit or a
                # questions edit made meanwhile leaves anything stale (then they are evaluated again)
                if built is not None and sources(defs) == built:
                    return 0
                if not plan:
                    wait_turn(instance, name, writers_elsewhere(settings, instance, name))
                observed, wanted = due(defs, instance, plan)
                head = observed[HEAD]
                if problem := too_many_shards(defs, settings.shards, head):
                    raise SettingsError(problem)
                print("\n".join(plan_lines(defs, instance, head, wanted, strategies)))
            except (NotesSourceError, QuestionsError, SettingsError) as exc:  # the notes, questions, shards
                print(f"error: {exc}", file=sys.stderr)
                return 2
            except StorageError as exc:  # the data directory's object store: its endpoint and variables
                print(f"error: {exc}", file=sys.stderr)
                return 1
            if not wanted or plan:
                return 0
            planned = {key.to_user_string() for key in wanted}
            progress = Progress(verbose=verbose, tty=sys.stdout.isatty(), planned=planned)
            # the run's log is shown by `Progress`, not by Dagster's console logger too
            quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
            config = pinned_config(defs.resources["notes_repo"], head) | quiet
            job = dg.reconstructable(reconstructable_job)
            try:
                run = run_shown(job, instance, list(wanted), config, {DATA_DIR_TAG: name}, progress, settings)
            except Exception:
                if (down := instance_down(instance)) is None:
                    raise
                print(f"error: {down}", file=sys.stderr)  # the run could not write its log there
                return 1
            if run is None:  # created at the same moment as another run, which goes first
                continue
            runs += 1
            print(f"run {run.run_id}: {run.status.value.lower()}")
            if run.status != dg.DagsterRunStatus.SUCCESS:
                if down := unreachable(settings):  # Redis stopped under the run
                    print(f"error: {down}", file=sys.stderr)
                return REJECTED_EXIT if progress.rejected() else 1
            built = observed
    print(f"still stale after {MAX_RUNS} runs", file=sys.stderr)
    return 1
