"""Events reported outside a run that the public API cannot build: a source's observation at a data
version, a blocking check's failure naming its materialization. No project module (the layers test)."""

from __future__ import annotations

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.data_version import DATA_VERSION_TAG


def observation(key: dg.AssetKey, version: str) -> dg.AssetObservation:
    """An observation of the source `key` at data `version`, to report outside a run. Gap: the
    public `AssetObservation` takes no data version (an observable source's own function returns
    one, but only inside a run)."""
    return dg.AssetObservation(key, tags={DATA_VERSION_TAG: version})


def failed_check(key: dg.AssetKey, name: str, record: dg.EventLogRecord, why: str) -> dg.AssetCheckEvaluation:
    """A failed evaluation of the blocking check `name` of the materialization `record`, to report
    outside a run. Gap: the public `AssetCheckEvaluation` names its materialization through a
    private class."""
    return dg.AssetCheckEvaluation(
        asset_key=key,
        check_name=name,
        passed=False,
        metadata={"why": dg.MetadataValue.text(why)},
        target_materialization_data=AssetCheckEvaluationTargetMaterializationData(
            storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
        ),
        severity=dg.AssetCheckSeverity.ERROR,
        blocking=True,
    )
