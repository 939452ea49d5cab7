"""Reads of what Dagster records that its public API does not give: an asset's own data version,
why the UI shows it unsynced, and a check's last result. Dagster's private modules only, no project module (the layers test)."""

from __future__ import annotations

import dagster as dg
from dagster._core.definitions.data_version import (
    DEFAULT_DATA_VERSION,
    CachingStaleStatusResolver,
    extract_data_version_from_entry,
)
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

EVALUATED = {AssetCheckExecutionRecordStatus.SUCCEEDED, AssetCheckExecutionRecordStatus.FAILED}


def latest_data_version(instance: dg.DagsterInstance, key: dg.AssetKey) -> str:
    """The data version of `key`'s latest materialization, else of its latest observation (a
    source), else the one Dagster records for a parent never observed. Gap: `get_asset_provenance`
    gives the versions a materialization was made from, but nothing public gives an asset's own."""
    record = instance.get_latest_data_version_record(key)
    version = None if record is None else extract_data_version_from_entry(record.event_log_entry)
    return (version or DEFAULT_DATA_VERSION).value


def stale_categories(context: dg.AutomationContext) -> set[str]:
    """Why the UI shows the asset unsynced: `CODE` (made by another code version), `DATA` (from
    other data versions of its parents), `DEPENDENCIES`. Gap: the stale status is not public."""
    view = context.asset_graph_view
    resolver = CachingStaleStatusResolver(
        view.instance, context.asset_graph, view, view.get_inner_queryer_for_back_compat()
    )
    return {cause.category.value for cause in resolver.get_stale_causes(context.key)}


def check_passed(instance: dg.DagsterInstance, key: dg.AssetCheckKey) -> bool | None:
    """Whether the check's latest evaluation passed; None when it was never evaluated (a step that
    plans it records it PLANNED first, so the planned ones are passed over). Gap: an asset check's
    records are read from the event log storage only."""
    history = instance.event_log_storage.get_asset_check_execution_history(key, limit=1, status=EVALUATED)
    return history[0].status == AssetCheckExecutionRecordStatus.SUCCEEDED if history else None
