"""What runs, and when: Dagster's declarative automation, evaluated by one sensor or by `make run`.

Every asset carries `rebuild_condition`: it is requested when it is missing, its code version changed
(the settings an output depends on are part of its code version), a parent was updated or is
requested on the same tick (so a commit and all it reaches go in one run), or its `outputs_intact`
check failed on its latest materialization; never while it or a parent is in progress. The two
sources are observed every minute by their own condition; `outputs_intact` runs at RAG_REINDEX_CRON
(the nightly re-index: whatever was deleted or damaged is built again). `make run` does both at once
(`look`) and then evaluates the same conditions in its own process (`requested`).
"""

import json
from collections import ChainMap
from collections.abc import Iterable, MutableMapping

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.asset_daemon_cursor import AssetDaemonCursor
from dagster._core.definitions.data_version import (
    DATA_VERSION_TAG,
    CachingStaleStatusResolver,
    StaleCauseCategory,
)
from dagster._serdes import deserialize_value, serialize_value

from rag_pipeline.defs.lineage import CONFIG, OUTPUTS, config_of, recorded
from rag_pipeline.defs.outputs import damaged, elsewhere
from rag_pipeline.defs.resources import DataStore
from rag_pipeline.defs.runs import DATA_DIR_TAG

OUTPUTS_CHECK = "outputs_intact"
OBSERVE_CRON = "* * * * *"  # a new commit or questions edit is seen within a minute
CURSOR = "rag/automation_cursor"  # where `make run` keeps its evaluation state in the instance
VERIFIED = "rag/verified_outputs"  # the LanceDB outputs `look` found whole, with their files' fingerprint
A = dg.AutomationCondition
REASONS = ("missing", "code or settings changed", "a parent was updated", "an output is missing or damaged")


class Unsynced(dg.AutomationCondition):
    """What the UI shows as unsynced: the asset's latest materialization was made by another code
    version (`CODE`) or from another data version of a parent (`DATA`) than the current ones, as
    Dagster's stale status reads it from the materialization's recorded provenance.

    Dagster's edge-triggered conditions (`any_deps_updated().since_last_handled()`) lose a change
    that lands between two evaluations together with a materialization of the asset (a run from the
    UI, or one the sensor's cursor saw but `make run`'s did not): on that tick the reset (the asset
    was updated) wins over the trigger (a parent was updated). The provenance cannot be outrun."""

    def __init__(self, category: StaleCauseCategory, label: str):
        self.category, self.label = category, label

    @property
    def name(self) -> str:
        return f"unsynced_{self.category.value.lower()}"

    def get_label(self) -> str:
        return self.label

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        view = context.asset_graph_view
        resolver = CachingStaleStatusResolver(
            view.instance, context.asset_graph, view, view.get_inner_queryer_for_back_compat()
        )
        causes = resolver.get_stale_causes(context.key)
        held = any(cause.category == self.category for cause in causes)
        return dg.AutomationResult(context, context.candidate_subset if held else context.get_empty_subset())


def rebuild_condition(key: dg.AssetKey) -> dg.AutomationCondition:
    """Missing, a new code version, an updated parent, or broken outputs; not while anything it
    reads is being written."""
    broken = A.any_checks_match(A.check_failed()).allow(
        dg.AssetSelection.checks(dg.AssetCheckKey(key, OUTPUTS_CHECK))
    )
    changed = A.code_version_changed().with_label(REASONS[1]) | A.any_deps_updated().with_label(REASONS[2])
    # not after a failed run: the provenance stays unsynced until a run succeeds, and the sensor
    # would request the failing step again every tick; a fix (a new commit, questions file or
    # setting) triggers `changed` again
    unsynced = (
        Unsynced(StaleCauseCategory.CODE, REASONS[1]) | Unsynced(StaleCauseCategory.DATA, REASONS[2])
    ) & ~A.execution_failed()
    # stateless too, for the same reason: what a requested parent reaches goes in the same run
    parent_requested = A.any_deps_match(A.will_be_requested()).with_label(REASONS[2])
    # missing and broken are states, true until the asset is built again: they stay outside
    # `since_last_handled`, whose first evaluation only sets its mark and whose mark a build in the
    # same tick resets (a new instance or data directory builds at once)
    return (
        (
            A.missing().with_label(REASONS[0])
            | broken.with_label(REASONS[3])
            | unsynced
            | parent_requested
            | changed.since_last_handled()
        )
        & ~A.any_deps_in_progress()
        & ~A.in_progress()
    ).with_label("rebuild")


OBSERVE = A.cron_tick_passed(OBSERVE_CRON).with_label("observed every minute")


def with_conditions(assets: Iterable) -> list:
    """`assets` with the rebuild condition on every materializable asset."""
    return list(
        dg.map_asset_specs(
            lambda spec: spec.replace_attributes(automation_condition=rebuild_condition(spec.key)),
            [a for a in assets if not getattr(a, "is_observable", False)],
        )
    ) + [a for a in assets if getattr(a, "is_observable", False)]


def latest_materializations(
    instance: dg.DagsterInstance, keys: Iterable[dg.AssetKey]
) -> dict[dg.AssetKey, dg.EventLogRecord | None]:
    """Each asset's latest materialization record, read in one query (its asset record)."""
    found = {
        r.asset_entry.asset_key: r.asset_entry.last_materialization_record
        for r in instance.get_asset_records(list(keys))
    }
    return {key: found.get(key) for key in keys}


def intact(
    record: dg.EventLogRecord | None,
    code_version: str | None,
    root: str,
    verified: MutableMapping[str, str] | None = None,
) -> tuple[bool, str]:
    """Whether the materialization `record` (an asset's latest) left its outputs whole in the data
    directory `root`, made under the settings its code version names now; why not. `verified`: see
    `damaged` (the nightly check passes none: it opens every table)."""
    if record is None:
        return True, "never materialized"
    metadata = record.asset_materialization.metadata
    made = recorded(metadata, CONFIG)
    wanted = config_of(code_version)
    if wanted is not None and made != wanted:
        return False, f"made under other settings ({made}, now {wanted})"
    files = recorded(metadata, OUTPUTS) or []
    problem = elsewhere(files, root) or damaged(files, verified)
    return problem is None, problem or "every output is there"


def outputs_check(
    assets: Iterable[dg.AssetsDefinition], cron: str, timezone: str
) -> dg.AssetChecksDefinition:
    """One `outputs_intact` check per asset, run together in one step at `cron`."""
    versions = {k: v for a in assets if not a.is_observable for k, v in a.code_versions_by_key.items()}
    description = (
        "Every file and LanceDB table the latest materialization recorded is there, readable, at the "
        "recorded version, without duplicate chunk ids, and made under the current settings."
    )
    specs = [
        dg.AssetCheckSpec(
            OUTPUTS_CHECK,
            asset=key,
            description=description,
            blocking=True,
            automation_condition=A.cron_tick_passed(cron, timezone).with_label(
                f"nightly ({cron} {timezone})"
            ),
        )
        for key in versions
    ]

    @dg.multi_asset_check(specs=specs, can_subset=True, name="outputs_intact")
    def outputs_intact(context: dg.AssetCheckExecutionContext, store: DataStore):
        root = str(store.path())
        selected = context.selected_asset_check_keys
        latest = latest_materializations(context.instance, [c.asset_key for c in selected])
        for check_key in selected:
            key = check_key.asset_key
            passed, why = intact(latest[key], versions[key], root)
            yield dg.AssetCheckResult(
                asset_key=check_key.asset_key, check_name=OUTPUTS_CHECK, passed=passed, metadata={"why": why}
            )

    return outputs_intact


def look(defs: dg.Definitions, instance: dg.DagsterInstance, observed: dict[dg.AssetKey, str]) -> None:
    """What the sources' and the checks' own conditions would have Dagster record, done at once in
    this process: a source whose version moved gets an observation, an asset whose outputs are
    broken gets a failed `outputs_intact` on its latest materialization (once)."""
    for key, version in observed.items():
        records = instance.fetch_observations(key, limit=1).records
        if not records or (records[0].asset_observation.tags or {}).get(DATA_VERSION_TAG) != version:
            instance.report_runless_asset_event(dg.AssetObservation(key, tags={DATA_VERSION_TAG: version}))
    graph = defs.resolve_asset_graph()
    root = str(defs.resources["store"].path())
    kept = instance.run_storage.get_cursor_values({VERIFIED}).get(VERIFIED)
    before = json.loads(kept) if kept else {}
    verified = ChainMap({}, before)  # what is found whole now: kept, so the record does not grow
    latest = latest_materializations(instance, graph.materializable_asset_keys)
    for key, record in latest.items():
        passed, why = intact(record, graph.get(key).code_version, root, verified)
        if passed:
            continue
        check_key = dg.AssetCheckKey(key, OUTPUTS_CHECK)
        execution = instance.event_log_storage.get_latest_asset_check_execution_by_key([check_key]).get(
            check_key
        )
        event = execution.event if execution is not None else None
        evaluation = event.dagster_event.event_specific_data if event and event.dagster_event else None
        target = getattr(evaluation, "target_materialization_data", None)
        if target is not None and target.storage_id == record.storage_id and not evaluation.passed:
            continue  # already recorded for this materialization
        instance.report_runless_asset_event(
            dg.AssetCheckEvaluation(
                asset_key=key,
                check_name=OUTPUTS_CHECK,
                passed=False,
                metadata={"why": dg.MetadataValue.text(why)},
                target_materialization_data=AssetCheckEvaluationTargetMaterializationData(
                    storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
                ),
                severity=dg.AssetCheckSeverity.ERROR,
                blocking=True,
            )
        )
    if verified.maps[0] != before:
        instance.run_storage.set_cursor_values({VERIFIED: json.dumps(verified.maps[0])})


def requested(
    defs: dg.Definitions, instance: dg.DagsterInstance, keep: bool = True
) -> dict[dg.AssetKey, list[str]]:
    """The assets the conditions request now, each with the reasons that held, evaluated as the
    sensor would, from the state `make run` left in the instance last time (kept there unless `keep`
    is false: a plan that runs nothing must not consume "a parent was updated", or the next
    `make run` would miss it)."""
    kept = instance.run_storage.get_cursor_values({CURSOR}).get(CURSOR)
    cursor = deserialize_value(kept, AssetDaemonCursor) if kept else None
    result = dg.evaluate_automation_conditions(
        defs, instance, asset_selection=dg.AssetSelection.all(), cursor=cursor
    )
    if keep:
        instance.run_storage.set_cursor_values({CURSOR: serialize_value(result.cursor)})
    found = {}
    for entry in result.results:
        if isinstance(entry.key, dg.AssetKey) and not entry.true_subset.is_empty:
            found[entry.key] = reasons(entry)
    return found


def reasons(result) -> list[str]:
    """The labels of the reasons that held in an evaluation of `rebuild_condition`."""
    held = []
    todo = list(result.child_results)
    while todo:
        child = todo.pop(0)
        label = child.condition.get_label()
        if label in REASONS and label not in held and not child.true_subset.is_empty:
            held.append(label)
        todo += child.child_results
    return held


def automation_sensor(enabled: bool, data_dir: str) -> dg.AutomationConditionSensorDefinition:
    """The one sensor that evaluates every condition (the daemon runs it every 30 s); its runs are
    tagged with the data directory, so the run queue lets one of them at a time write it."""
    return dg.AutomationConditionSensorDefinition(
        "rag_automation",
        use_user_code_server=True,  # `Unsynced` is a condition of this project's code, not Dagster's
        target=dg.AssetSelection.all(include_sources=True) | dg.AssetSelection.all_asset_checks(),
        default_status=dg.DefaultSensorStatus.RUNNING if enabled else dg.DefaultSensorStatus.STOPPED,
        run_tags={DATA_DIR_TAG: data_dir},
        description="Observes the notes branch and the questions file every minute, checks every output "
        "at RAG_REINDEX_CRON, and runs whatever is missing, changed or broken with all it reaches.",
    )
