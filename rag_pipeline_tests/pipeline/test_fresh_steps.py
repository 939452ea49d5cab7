"""A step whose inputs and code did not change returns at once, whatever selected it: with every
asset selected ("Materialize all", `dagster asset materialize --select '*'`) and nothing changed,
every step returns its last output without reading an input."""

import dagster as dg

from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.internals.reads import check_passed
from rag_pipeline.defs.platform.lineage import BOOKKEEPING, CONFIG, REUSED, materialized
from rag_pipeline.defs.resources import DataStore
from rag_pipeline.settings import Settings
from rag_pipeline_tests.support.runs import (
    done_and_reused,
    materialization_metadata,
    project_definitions,
    run_all,
)


def test_every_asset_selected_with_nothing_changed_reads_no_input(small_env, monkeypatch):
    instance = dg.DagsterInstance.ephemeral()
    # the code versions are taken before the spy below replaces a method they are a digest of
    assets = list(project_definitions(small_env).assets)
    first = run_all(small_env, assets, instance=instance)
    assert first.success
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
    # no check declared with an asset is evaluated again, nor replayed: each one's last evaluation,
    # of this very output, stands (a check of its own, `live_release`, runs every time)
    stages = [a for a in assets if isinstance(a, dg.AssetsDefinition) and a.keys]
    declared = {spec.key for a in stages for spec in a.check_specs}
    assert not [e for e in result.get_asset_check_evaluations() if e.asset_check_key in declared]
    assert declared and all(check_passed(instance, k) for k in declared)
    # what a reused output records: what it was made under and by which run, no report, no work
    embeddings = materialization_metadata(result, "embeddings_fixed_200")
    assert set(embeddings) == {CONFIG, BOOKKEEPING, REUSED}, embeddings
    assert embeddings[REUSED] == first.run_id  # a link to it in the UI


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
    # the check of the reused output was not evaluated again: its one evaluation that passed stands
    assert [len(r.get_asset_check_evaluations()) for r in results] == [1, 1, 0]
    assert check_passed(instance, dg.AssetCheckKey(probe.key, "probe_holds")) is True
    # a stage asset's checks are evaluated as it is made: one selected alone fails, saying so
    alone = dg.materialize(
        [probe],
        instance=instance,
        resources={"store": store},
        selection=dg.AssetSelection.checks(dg.AssetCheckKey(probe.key, "probe_holds")),
        raise_on_error=False,
    )
    [failure] = [e for e in alone.all_events if e.is_step_failure]
    assert "probe's checks are evaluated as it is made" in failure.step_failure_data.error.message
    assert made == [False, True]
