"""Running the project's Definitions in this process (materialize, or take the `make run` path), or
its CLIs in a process of their own."""

import difflib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


def project_definitions(env: dict[str, str]):
    """The project's Definitions as the code location builds them from `env` (as `make run` does,
    a failed asset is retried at once unless `env` says otherwise)."""
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline.settings import Settings

    return build_definitions(Settings.from_env({"RAG_RETRY_AFTER": "0"} | env))


def forget_reconstructed_jobs() -> None:
    """Dagster keeps the job a `reconstructable` pointer last built (an `lru_cache` on the method):
    the next execution of the pointer in this process builds it again, from the environment now."""
    from dagster._core.definitions.reconstruct import ReconstructableJob  # no public way to clear it

    ReconstructableJob.get_definition.cache_clear()
    ReconstructableJob.get_repository_definition.cache_clear()


def run_all(
    env: dict[str, str],
    assets=None,
    *,
    instance=None,
    selection=None,
    resources: dict | None = None,
    raise_on_error: bool = True,
):
    """Materialize the asset graph (default: the project's) in-process with the resources `env` describes."""
    import dagster as dg

    project = project_definitions(env)
    return dg.materialize(
        project.assets if assets is None else assets,
        selection=selection,
        resources=project.resources | (resources or {}),
        instance=instance or dg.DagsterInstance.ephemeral(),
        raise_on_error=raise_on_error,
    )


@dataclass
class Found:
    """What `make run` found before its run: the assets the conditions request (with the reasons that
    held), and those Dagster reports as unsynced or missing (with its reason)."""

    requested: dict
    stale: dict
    after: dict | None = None  # what would be requested right after the run (the cursor not kept)

    def names(self) -> list[str]:
        """The requested assets' names, sorted."""
        return sorted(k.to_user_string() for k in self.requested)


def make_run(defs, instance) -> tuple[Found, object]:
    """What `make run` does, in this process: end the runs whose process is gone, observe and check
    (`automation.look`), evaluate the assets' conditions, execute one run of what they request (None
    when nothing is)."""
    from rag_pipeline.cli.run import due, execute, pinned_config
    from rag_pipeline.defs.platform.runs import end_dead_runs
    from rag_pipeline.defs.sources import HEAD

    end_dead_runs(instance)
    observed, wanted = due(defs, instance)
    found = Found(wanted, unsynced(defs, instance))
    if not wanted:
        return found, None
    job = defs.resolve_job_def("index_and_evaluate")
    config = pinned_config(defs.resources["notes_repo"], observed[HEAD])
    result = execute(job, instance, list(wanted), config, {})
    found.after = due(defs, instance)[1]  # what would be requested now
    return found, result


def failed(result) -> list[str]:
    """The steps a run's result records as failed."""
    return [e.step_key for e in result.all_events if e.is_step_failure]


def materialize_all(env: dict[str, str], instance) -> object:
    """What the UI's *Materialize all* does: every asset selected, no automation evaluated. A
    success, or a release the gate rejected; the result."""
    defs = project_definitions(env)
    keys = list(defs.resolve_asset_graph().materializable_asset_keys)
    result = defs.resolve_job_def("index_and_evaluate").execute_in_process(
        instance=instance, asset_selection=keys, raise_on_error=False
    )
    assert result.success or failed(result) == ["release"], failed(result)
    return result


def done_and_reused(result) -> tuple[set[str], set[str]]:
    """The assets a run computed, and those it reused because their inputs were unchanged."""
    done, reused = set(), set()
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        (reused if "reused" in mat.metadata else done).add(mat.asset_key.to_user_string())
    return done, reused


def materialization_metadata(result, asset: str) -> dict:
    """The metadata values of `asset`'s materialization in a run's result."""
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key.to_user_string() == asset:
            return {k: v.value for k, v in mat.metadata.items()}
    raise KeyError(asset)


def cli(module: str, args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """A CLI of the project run as a user would, from `cwd`, with `env` over this environment."""
    from rag_pipeline.cli.instance import make

    (cwd / "dagster_home").mkdir(exist_ok=True)
    (cwd / "dagster_home" / "dagster.yaml").write_text(  # as `make run` sets it up: runs start at once
        "run_coordinator:\n  module: dagster.core.run_coordinator\n  class: DefaultRunCoordinator\n"
    )
    if not (cwd / "dagster_home" / "history").exists():  # its storage too, once, under the lock
        make(cwd / "dagster_home")
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=os.environ | {"DAGSTER_HOME": str(cwd / "dagster_home")} | env,
        capture_output=True,
        text=True,
    )


def asked(monkeypatch, capsys, env: dict, *args: str) -> tuple[int, str, str]:
    """`python -m rag_pipeline.ask ARGS` in this process under `env`: (exit code, stdout, stderr)."""
    from rag_pipeline.cli import ask

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code = ask.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_same_reports(reports, expected, ignore: tuple[str, ...] = ()) -> None:
    """The reports under `reports` (a local path or an S3 `Location`) equal those under the local
    `expected`, but for measured latencies (in report.md's tables too) and the columns in `ignore`."""
    import pandas as pd
    import pyarrow.parquet as pq

    from rag_pipeline.lib.core import Location, read_frame

    names = [f.name for f in (reports.files() if isinstance(reports, Location) else reports.iterdir())]
    assert sorted(names) == sorted(f.name for f in expected.iterdir())
    for path in expected.glob("*.parquet"):
        names = pq.read_schema(path).names
        timing = [c for c in names if c.startswith("latency_") or c in ignore]  # measured, not computed
        pd.testing.assert_frame_equal(
            read_frame(reports / path.name).drop(columns=timing), pd.read_parquet(path).drop(columns=timing)
        )
    got, want = (unmeasured((r / "report.md").read_text()) for r in (reports, expected))
    assert got == want, "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True)))


MEASURED_COLUMNS = {"p95 ms"}  # report.md's columns of measured figures (latency varies run to run)


def unmeasured(markdown: str) -> str:
    """`markdown` with the cells of its tables' measured columns blanked."""
    lines, blank = [], set()
    for line in markdown.split("\n"):
        cells = line.split("|")
        if line.startswith("|") and MEASURED_COLUMNS & {c.strip() for c in cells}:
            blank = {i for i, c in enumerate(cells) if c.strip() in MEASURED_COLUMNS}
        elif line.startswith("|") and not line.startswith("|---"):
            cells = [" measured " if i in blank else c for i, c in enumerate(cells)]
        elif not line.startswith("|"):
            blank = set()
        lines.append("|".join(cells))
    return "\n".join(lines)


def unsynced(defs, instance) -> dict:
    """The assets the UI shows as unsynced or never materialized, each with Dagster's first reason."""
    import datetime

    from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus

    graph = defs.resolve_asset_graph()
    now = TemporalContext(effective_dt=datetime.datetime.now(datetime.timezone.utc), last_event_id=None)
    view = AssetGraphView(temporal_context=now, instance=instance, asset_graph=graph)
    resolver = CachingStaleStatusResolver(instance, graph, view)
    found = {}
    for key in graph.materializable_asset_keys:
        status = resolver.get_status(key)
        if status == StaleStatus.MISSING:
            found[key] = "never materialized"
        elif status == StaleStatus.STALE:
            cause = resolver.get_stale_causes(key)[0]
            found[key] = (
                f"{cause.reason} ({cause.dependency.asset_key.to_user_string()})"
                if cause.dependency
                else cause.reason
            )
    return found


def recorded_run(instance, status, process: str, host: str | None = None):
    """A run in `instance` with `status`, executed by `process` (`pid@start`) of `host` (this one)."""
    import dagster as dg

    from rag_pipeline.defs.platform.runs import HOST_TAG, PROCESS_TAG
    from rag_pipeline.lib.core.process import this_host

    tags = {HOST_TAG: host or this_host(), PROCESS_TAG: process}
    return instance.add_run(dg.DagsterRun(job_name="index_and_evaluate", status=status, tags=tags))


def until(what, timeout: float = 300.0, every_s: float = 1.0):
    """`what()` once it is truthy, polled every `every_s` (what another process or thread does)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if found := what():
                return found
        except OSError:  # not answering yet
            pass
        time.sleep(every_s)
    raise TimeoutError(f"not within {timeout:.0f} s")


def hashing_env(
    notes: object, questions: object, strategies: str, retrievers: str, **more: str
) -> dict[str, str]:
    """The settings of a test build on the hashing embedder: the notes repository, the questions
    file, the strategies and retrievers, and `more` (`RAG_*` variables)."""
    return {
        "RAG_NOTES_REPO": str(notes),
        "RAG_QUESTIONS": str(questions),
        "RAG_EMBEDDER": "hashing",
        "RAG_STRATEGIES": strategies,
        "RAG_RETRIEVERS": retrievers,
        **more,
    }


def at_once(command: list[str], envs: list[dict[str, str]]) -> list[str]:
    """`command` started in one process per environment at once (machines sharing a data
    directory); each one's output, once every one has exited 0."""
    runs = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for env in envs
    ]
    outputs = [run.communicate(timeout=900)[0] for run in runs]
    assert [run.returncode for run in runs] == [0] * len(runs), [out[-3000:] for out in outputs]
    return outputs
