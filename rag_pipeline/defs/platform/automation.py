"""What runs, and when: Dagster's declarative automation (the conditions: `defs/platform/conditions.py`),
evaluated by one sensor, which `make run` invokes in its own process too (`requested`), after
observing the sources and checking every output at once (`look`). `outputs_intact` runs at
RAG_REINDEX_CRON (the nightly re-index): whatever was deleted or damaged is built again."""

import logging
from collections.abc import Iterable

import dagster as dg

from rag_pipeline.defs.platform.conditions import OUTPUTS_CHECK, REASONS
from rag_pipeline.defs.platform.internals.events import failed_check, observation
from rag_pipeline.defs.platform.lineage import CONFIG, OUTPUTS, config_of, recorded
from rag_pipeline.defs.platform.outputs import damaged, elsewhere
from rag_pipeline.defs.resources import DataStore

SENSOR = "rag_automation"
CODE_VERSION = "dagster/code_version"  # the tag Dagster gives a materialization: its code version
A = dg.AutomationCondition


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
    opened: bool,
    settings: bool = True,
) -> tuple[bool, str]:
    """Whether the materialization `record` (an asset's latest) left its outputs whole in the data
    directory `root`, made under the settings its code version names now (unless not `settings`);
    why not. `opened`: open every LanceDB table (the nightly check), not only those whose files
    changed since their writer."""
    if record is None:
        return True, "never materialized"
    metadata = record.asset_materialization.metadata
    made = recorded(metadata, CONFIG)
    wanted = config_of(code_version)
    if settings and wanted is not None and made != wanted:
        return False, f"made under other settings ({made}, now {wanted})"
    files = recorded(metadata, OUTPUTS) or []
    problem = elsewhere(files, root) or damaged(files, every=opened)
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
            passed, why = intact(latest[key], versions[key], root, opened=True)
            yield dg.AssetCheckResult(
                asset_key=check_key.asset_key, check_name=OUTPUTS_CHECK, passed=passed, metadata={"why": why}
            )

    return outputs_intact


def broken_outputs(
    defs: dg.Definitions, instance: dg.DagsterInstance
) -> dict[dg.AssetKey, tuple[dg.EventLogRecord, str]]:
    """The assets whose latest materialization's outputs are not whole now, with why."""
    graph = defs.resolve_asset_graph()
    root = str(defs.resources["store"].path())
    found = {}
    for key, record in latest_materializations(instance, graph.materializable_asset_keys).items():
        version = graph.get(key).code_version
        # made by another code version: requested as unsynced (`code or settings changed`), and other
        # settings are what that code version says, no damage (a labels file edited, say)
        same_code = record is not None and record.asset_materialization.tags.get(CODE_VERSION) == version
        passed, why = intact(record, version, root, opened=False, settings=same_code)
        if not passed:
            found[key] = (record, why)
    return found


def look(defs: dg.Definitions, instance: dg.DagsterInstance, observed: dict[dg.AssetKey, str]) -> None:
    """What the sources' and the checks' own conditions would have Dagster record, done at once in
    this process: a source whose version moved gets an observation, an asset whose outputs are
    broken gets a failed `outputs_intact` on its latest materialization (once)."""
    for key, version in observed.items():
        if source_version(instance, key) != version:
            instance.report_runless_asset_event(observation(key, version))
    broken = broken_outputs(defs, instance)
    if not broken:
        return
    checks = [dg.AssetCheckKey(key, OUTPUTS_CHECK) for key in broken]
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(checks)
    for key, (record, why) in broken.items():
        execution = latest.get(dg.AssetCheckKey(key, OUTPUTS_CHECK))
        event = execution.event if execution is not None else None
        evaluation = event.dagster_event.event_specific_data if event and event.dagster_event else None
        target = getattr(evaluation, "target_materialization_data", None)
        if target is not None and target.storage_id == record.storage_id and not evaluation.passed:
            continue  # already recorded for this materialization
        instance.report_runless_asset_event(failed_check(key, OUTPUTS_CHECK, record, why))


def source_version(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """The data version of a source's latest observation."""
    records = instance.fetch_observations(key, limit=1).records
    return records[0].asset_observation.data_version if records else None


def requested(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[dg.AssetKey, list[str]]:
    """The assets the conditions request now, each with the reasons that held: the automation
    sensor, evaluated in this process as the daemon would evaluate it (no cursor: the conditions
    keep no state)."""
    sensor = defs.resolve_sensor_def(SENSOR)
    logging.disable(logging.INFO)  # the evaluation logs a line per asset, and one before and after
    try:
        result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    finally:
        logging.disable(logging.NOTSET)
    wanted = {key for r in result.run_requests for key in (r.asset_selection or [])}
    return {e.key: reasons(e) for e in result.automation_condition_evaluations if e.key in wanted}


def foreseen(
    defs: dg.Definitions, instance: dg.DagsterInstance, observed: dict[dg.AssetKey, str]
) -> dict[dg.AssetKey, list[str]]:
    """What `requested` would return once `look` recorded `observed` and the broken outputs, with
    nothing recorded (a plan writes nothing): the evaluation as it stands, plus what a source that
    moved or a broken output reaches in the graph, as a requested parent brings its children."""
    graph = defs.resolve_asset_graph()
    moved = [key for key, version in observed.items() if source_version(instance, key) != version]
    broken = broken_outputs(defs, instance)
    below = dg.AssetSelection.assets(*moved, *broken).downstream().resolve(graph)
    found = {key: [REASONS[2]] for key in below if graph.get(key).is_materializable}
    return found | {key: [REASONS[3]] for key in broken} | requested(defs, instance)


def reasons(evaluation) -> list[str]:
    """The labels of the reasons that held in an evaluation of `rebuild_condition`."""
    held = []
    todo = list(evaluation.child_evaluations)
    while todo:
        child = todo.pop(0)
        label = child.condition_snapshot.label
        if label in REASONS and label not in held and child.true_subset.size:
            held.append(label)
        todo += child.child_evaluations
    return held


def automation_sensor(enabled: bool, tags: dict[str, str]) -> dg.AutomationConditionSensorDefinition:
    """The one sensor that evaluates every condition (the daemon runs it every 30 s); its runs carry
    `tags`: the data directory, so the run queue lets one of them at a time write it, and the shared
    settings and code (`runs.settings_tags`)."""
    return dg.AutomationConditionSensorDefinition(
        SENSOR,
        use_user_code_server=True,  # `Unsynced` and `RetryLater` are this project's conditions
        target=dg.AssetSelection.all(include_sources=True) | dg.AssetSelection.all_asset_checks(),
        default_status=dg.DefaultSensorStatus.RUNNING if enabled else dg.DefaultSensorStatus.STOPPED,
        run_tags=tags,
        description="Observes the notes branch and the questions file every minute, checks every output "
        "at RAG_REINDEX_CRON, and runs whatever is missing, changed, broken or failed with all it reaches.",
    )
