"""A step whose inputs and code did not change returns at once, whatever selected it: with every
asset selected ("Materialize all", `dagster asset materialize --select '*'`) and nothing changed,
every step returns its last output without reading an input."""

import dagster as dg

from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.lineage import materialized
from rag_pipeline.defs.resources import DataStore
from rag_pipeline.settings import Settings
from rag_pipeline_tests.support.runs import done_and_reused, project_definitions, run_all


def test_every_asset_selected_with_nothing_changed_reads_no_input(small_env, monkeypatch):
    instance = dg.DagsterInstance.ephemeral()
    # the code versions are taken before the spy below replaces a method they are a digest of
    assets = list(project_definitions(small_env).assets)
    assert run_all(small_env, assets, instance=instance).success
    reads: list[str] = []
    read = DataStore.read

    def counted(self, relative: str, **options):
        reads.append(relative)
        return read(self, relative, **options)

    monkeypatch.setattr(DataStore, "read", counted)
    result = run_all(small_env, assets, instance=instance)
    assert result.success
    done, reused = done_and_reused(result)
    graph = project_definitions(small_env).resolve_asset_graph()
    assert done == set()
    assert reused == {k.to_user_string() for k in graph.materializable_asset_keys}
    assert reads == []
    # the checks are replayed from the reused materializations, passing as they did
    assert all(e.passed for e in result.get_asset_check_evaluations())


def test_an_output_whose_check_failed_is_made_again_and_one_whose_check_passed_is_reused(tmp_path):
    """Whether a reused output's check passed is read from Dagster's check records: a failed
    (warning) check makes the next run compute the asset again, a passed one lets it be reused."""
    outcomes = iter([False, True])
    made: list[bool] = []

    @stage_asset(
        "probe", group="probe", deps=[], description="A probe.", checks=[("probe_holds", "Its rule.", False)]
    )
    def probe(context: dg.AssetExecutionContext, store: DataStore):
        made.append(next(outcomes))
        return materialized("v1", {}, checks=[dg.AssetCheckResult(check_name="probe_holds", passed=made[-1])])

    instance = dg.DagsterInstance.ephemeral()
    store = DataStore.from_settings(Settings.from_env({"RAG_DATA_DIR": str(tmp_path)}))
    results = [dg.materialize([probe], instance=instance, resources={"store": store}) for _ in range(3)]
    assert made == [False, True]  # the third run reused the second's output
    assert [done_and_reused(r)[1] for r in results] == [set(), set(), {"probe"}]
