"""Running the project's Definitions in this process: materialize, or take the `make run` path."""


def project_definitions(env: dict[str, str]):
    """The project's Definitions as the code location builds them from `env`."""
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline.settings import Settings

    return build_definitions(Settings.from_env(env))


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


def make_run(defs, instance):
    """What `make run` does, in this process: observe, plan, execute the planned run (none when
    everything is fresh). Returns (plan, result or None)."""
    from rag_pipeline.defs.planner import execute, next_run

    r = defs.resources
    graph = defs.resolve_asset_graph()
    found, request = next_run(graph, instance, r["notes_repo"], r["questions_file"])
    result = None if request is None else execute(defs, instance, request, "index_and_evaluate")
    return found, result


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


def assert_same_reports(reports, expected, ignore: tuple[str, ...] = ()) -> None:
    """The reports under `reports` (a local path or an S3 `Location`) equal those under the local
    `expected`, but for measured latencies and the columns in `ignore`."""
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
    assert (reports / "report.md").read_text() == (expected / "report.md").read_text()
