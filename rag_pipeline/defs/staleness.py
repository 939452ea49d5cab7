"""Which assets are stale, and running only those, one hop at a time.

An asset is stale when it was never materialized, was materialized by another code version, or
from an upstream data version other than the latest: Dagster's own rule, read from the tags
every materialization carries. A hop runs the stale assets; an upstream that produced the same
data (equal content data versions) leaves its downstream fresh, so a commit that changes no
note stops at `source_notes` and a chunker change runs its lane and what its metrics reach.
"""

from collections.abc import Sequence

import dagster as dg

DATA_VERSION = "dagster/data_version"
CODE_VERSION = "dagster/code_version"
INPUT_VERSION = "dagster/input_data_version/"
HEAD = dg.AssetKey("notes_head")
MAX_HOPS = 20  # deeper than the lineage: a loop of hops that never settles is a bug, not a wait


def _tags(record) -> dict[str, str]:
    entry = record.event_log_entry
    event = entry.asset_materialization or entry.asset_observation
    return dict(event.tags or {}) if event else {}


def latest_data_version(instance: dg.DagsterInstance, key: dg.AssetKey, observed: bool) -> str | None:
    """The latest data version; a source never observed counts as Dagster's `INITIAL`."""
    record = instance.get_latest_data_version_record(key, is_source=observed)
    if record is None:
        return "INITIAL" if observed else None
    return _tags(record).get(DATA_VERSION)


def stale_assets(graph, instance: dg.DagsterInstance) -> list[dg.AssetKey]:
    """The materializable assets of `graph` (an asset graph) that are stale now, upstream first."""
    stale = []
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if not node.is_materializable:
            continue
        record = instance.get_latest_data_version_record(key, is_source=False)
        if record is None:
            stale.append(key)
            continue
        tags = _tags(record)
        if tags.get(CODE_VERSION) != node.code_version:
            stale.append(key)
            continue
        for parent in node.parent_keys:
            current = latest_data_version(instance, parent, observed=not graph.get(parent).is_materializable)
            if tags.get(INPUT_VERSION + parent.to_user_string()) != current:
                stale.append(key)
                break
    return stale


def run_stale(
    definitions: dg.Definitions,
    instance: dg.DagsterInstance,
    job_name: str,
    *,
    run_config: dict | None = None,
    tags: dict[str, str] | None = None,
) -> list[list[str]]:
    """Observe the notes head, then run the job on the stale assets hop by hop until none is left.

    Returns the assets each run executed (the observation first); raises when a run fails."""
    job = definitions.resolve_job_def(job_name)
    hops: list[Sequence[dg.AssetKey]] = [[HEAD]]
    done = []
    for _ in range(MAX_HOPS):
        selection = hops[-1]
        result = job.execute_in_process(
            instance=instance, asset_selection=list(selection), run_config=run_config, tags=tags
        )
        done.append([k.to_user_string() for k in selection])
        if not result.success:
            raise RuntimeError(f"run {result.run_id} of {job_name} failed")
        stale = stale_assets(definitions.resolve_asset_graph(), instance)
        if not stale:
            return done
        hops.append(stale)
    raise RuntimeError(
        f"{job_name}: assets still stale after {MAX_HOPS} runs: {[k.to_user_string() for k in stale]}"
    )
