"""LanceDB's side of the store seam below `lance.LanceStore`: the connection, the index, the tags
a cleanup keeps, and the incremental sync of one embedded table per chunking strategy.

A sync is one LanceDB commit (merge on chunk_id), so a build killed half-way leaves the
previous version readable. Vectors are L2-normalised, so the index uses the cosine metric.

Several processes, on several machines, may sync one table at once, with no lock: each sync reads
the table again after it writes and writes again until the table holds exactly its rows, each
chunk_id once. Whichever writes last checks last, so the table ends as one of them left it.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, as_path, storage_options, tree_bytes
from rag_pipeline.lib.serving.diff import MUTABLE, diff_rows, values
from rag_pipeline.lib.serving.rows import LazyRows, as_rows, row_reader, serving_schema
from rag_pipeline.lib.serving.store import DEFAULT_ANN, DEFAULT_RETAIN, LIVE, AnnConfig

if TYPE_CHECKING:  # lancedb takes seconds to import: loaded where a table is opened
    import lancedb
    from lancedb.index import HnswSq, IvfPq


def connect(db_dir: str | AnyPath, consistency: timedelta) -> lancedb.DBConnection:
    """The LanceDB database in `db_dir`, whose reads see commits at most `consistency` old."""
    import lancedb

    return lancedb.connect(
        str(db_dir), read_consistency_interval=consistency, storage_options=storage_options(db_dir)
    )


def vector_index(table: lancedb.table.Table) -> lancedb.index.IndexConfig | None:
    return next((i for i in table.list_indices() if i.columns == ["vector"]), None)


def index_kind(table: lancedb.table.Table) -> str:
    """`exact` when the table has no vector index, else e.g. `ivf_pq`."""
    index = vector_index(table)
    return "exact" if index is None else table.index_stats(index.name).index_type.lower()


def ivf_pq(ann: AnnConfig, rows: int, dim: int) -> tuple[IvfPq, dict]:
    from lancedb.index import IvfPq

    params = {
        "num_partitions": max(1, round(math.sqrt(rows))),
        "num_sub_vectors": max(1, dim // ann.sub_vector_dims),
        "num_bits": 8,
        "max_iterations": ann.kmeans_iterations,
    }
    return IvfPq(distance_type="cosine", **params), params


def ivf_hnsw_sq(ann: AnnConfig, rows: int, dim: int) -> tuple[HnswSq, dict]:
    from lancedb.index import HnswSq

    # one graph: the tables here are small enough to train it in memory
    params = {"num_partitions": 1, "m": 20, "ef_construction": 300, "max_iterations": ann.kmeans_iterations}
    return HnswSq(distance_type="cosine", **params), params


# each ANN kind's LanceDB index, by the names of `store.ANN_QUERIES`
INDEXES: dict[str, Callable[[AnnConfig, int, int], tuple[IvfPq | HnswSq, dict]]] = {
    "ivf_pq": ivf_pq,
    "ivf_hnsw_sq": ivf_hnsw_sq,
}


def index_config(ann: AnnConfig, rows: int, dim: int) -> tuple[IvfPq | HnswSq, dict]:
    """The LanceDB index config `ann` gives a table of `rows` vectors, and its parameters to report."""
    if ann.kind not in INDEXES:
        raise ValueError(f"unknown ANN index kind {ann.kind!r} ({' or '.join(INDEXES)})")
    return INDEXES[ann.kind](ann, rows, dim)


def tagged_version(table: lancedb.table.Table, tag: str) -> int | None:
    found = table.tags.list().get(tag)
    return None if found is None else int(found["version"])


def cleanup_age(table: lancedb.table.Table, retain: timedelta) -> timedelta:
    """The `cleanup_older_than` that removes versions older than `retain` but none as recent as the
    live one: LanceDB refuses a cleanup that would reach a tagged version."""
    live = tagged_version(table, LIVE)
    if live is None:
        return retain
    stamps = {v["version"]: v["timestamp"] for v in table.list_versions()}
    if live not in stamps:
        return retain
    stamp = stamps[live]
    now = datetime.now(stamp.tzinfo)  # LanceDB's stamps are local time, as `now` is
    return max(retain, now - stamp + timedelta(minutes=1))


def _id_list(ids: list[str]) -> str:
    return "chunk_id IN (" + ", ".join("'" + c.replace("'", "''") + "'" for c in ids) + ")"


def _drop_duplicates(table: lancedb.table.Table) -> tuple[pa.Table, int]:
    """The table's chunk_id and MUTABLE columns, once every row of a chunk_id it holds more than
    once (left by an older version, a crash or another writer) is deleted, so the merge that
    follows writes it once again; and how many ids were repaired."""
    old = table.search().select(["chunk_id", *MUTABLE]).limit(None).to_arrow()
    ids = values(old, "chunk_id")
    if ids.is_unique:
        return old, 0
    twice = sorted(set(ids[ids.duplicated()]))
    for start in range(0, len(twice), 500):
        table.delete(_id_list(twice[start : start + 500]))
    return table.search().select(["chunk_id", *MUTABLE]).limit(None).to_arrow(), len(twice)


def _open_or_create(db: lancedb.DBConnection, table_name: str, schema: pa.Schema) -> lancedb.table.Table:
    try:
        return db.open_table(table_name)
    except ValueError:  # LanceDB's "table not found"
        # another process may create it meanwhile: then this opens the one it created
        return db.create_table(table_name, schema=schema, exist_ok=True)


def _sync_index(table: lancedb.table.Table, ann: AnnConfig, dim: int, churn: int) -> dict:
    """Drop the index below min_rows; (re)train it when missing, of another kind, or when
    most vectors are new since the last sync (a new embedder makes old centroids meaningless).
    Otherwise `optimize` folds new rows into the trained index."""
    rows = table.count_rows()
    current = vector_index(table)
    if rows < ann.min_rows:
        if current is not None:
            table.drop_index(current.name)
        return {"index_type": "exact", "index_params": {}, "index_trained": False}
    train = current is None or index_kind(table) != ann.kind or 2 * churn > rows
    params: dict = {}
    if train:
        config, params = index_config(ann, rows, dim)
        table.create_index("vector", config=config, replace=True)
        current = vector_index(table)
    details = current.index_details or {}
    params = {
        **params,
        "metric": str(details.get("metric_type", "cosine")).lower(),
        **{k: v for k, v in details.items() if k in ("compression", "hnsw")},
        **ann.query_params(),
        "min_rows": ann.min_rows,
    }
    return {"index_type": ann.kind, "index_params": params, "index_trained": train}


COMPACT_FRAGMENTS = 16  # a small sync adds a fragment; compaction rewrites the table, so it waits
COMPACT_CHANGE = 0.1  # ... unless a sync changed this share of the rows (their old copies take disk)


def _compact_now(table: lancedb.table.Table, changed: int, trained: bool) -> bool:
    """Whether to `optimize` (compact, fold new rows into the index, clean up old versions) now:
    after a large change or training, or once small syncs have left COMPACT_FRAGMENTS fragments.
    Until then new rows are searched exactly beside the index, so results do not change."""
    if trained or changed > COMPACT_CHANGE * max(table.count_rows(), 1):
        return True
    return changed > 0 and table.stats()["fragment_stats"]["num_fragments"] >= COMPACT_FRAGMENTS


def _preempted(exc: Exception) -> bool:
    """LanceDB's commit conflict: another process committed first, and the write may be tried again."""
    return "Please retry" in str(exc) or "Retryable commit conflict" in str(exc)


def _retried(write: Callable[[], Any]) -> Any:
    """A LanceDB write, tried again while another process's commits preempt it."""
    for attempt in range(1, SYNC_ROUNDS):
        try:
            return write()
        except Exception as exc:
            if not _preempted(exc):
                raise
            time.sleep(0.2 * attempt)
    return write()  # the last try: its error is the sync's


def _merge(table: lancedb.table.Table, diff, batches, everything: np.ndarray):
    """One commit: the rows `diff` adds or updates written, the ids it removes deleted."""
    listed = len(diff.removed) <= MAX_LISTED_DELETES
    write = np.union1d(diff.added, diff.updated) if listed else everything
    differs = " OR ".join(f"target.{c} != source.{c}" for c in MUTABLE)
    merge = table.merge_insert("chunk_id").when_matched_update_all(where=differs)
    merge = merge.when_not_matched_insert_all()
    if diff.removed:
        merge = merge.when_not_matched_by_source_delete(_id_list(diff.removed) if listed else None)
    return merge.execute(batches(write))


MAX_LISTED_DELETES = 1000  # past this many removed ids a sync merges every row (no long IN list)
SYNC_ROUNDS = 5  # writes of one sync, each after a check of the table: another writer may interleave


def sync_table(
    db_dir: str | AnyPath,
    table_name: str,
    rows: pa.Table | LazyRows,
    *,
    ann: AnnConfig = DEFAULT_ANN,
    retain: timedelta = DEFAULT_RETAIN,
) -> dict:
    """Make table `table_name` hold exactly `rows` (see `serving_rows`, `LazyRows`), touching only
    what changed.

    New chunk_ids are inserted, missing ones deleted, and rows whose access, commit or
    embedding_version differ rewritten, all in one commit; only the rows written are built (their
    vectors read). A chunk_id the table holds twice is deleted and written once again. The table is
    read again after a write, and written again while another writer left it otherwise. Then, when
    `_compact_now`, the table is compacted, the index kept in step and versions older than `retain`
    removed, never one as recent as the version tagged `live`.
    Returns metadata for the asset.
    """
    source = as_rows(rows, table_name)
    dim = source.dim
    schema = serving_schema(dim)
    keys = source.keys()
    if keys["chunk_id"].duplicated().any():
        raise ValueError(f"table {table_name}: duplicate chunk_ids in the rows")

    def batches(positions: np.ndarray) -> pa.RecordBatchReader:
        return row_reader(source, positions, table_name)

    db = connect(db_dir, timedelta(0))  # every read sees the latest commit, another process's too
    table = _open_or_create(db, table_name, schema)
    everything = np.arange(source.num_rows)
    changes = {"rows_added": 0, "rows_removed": 0, "rows_updated": 0}
    repaired = 0
    if table.schema.field("vector").type != schema.field("vector").type:
        # another embedder's dimension: the whole table is replaced, still as one new version
        changes |= {"rows_added": source.num_rows, "rows_removed": table.count_rows()}
        table = db.create_table(table_name, data=batches(everything), schema=schema, mode="overwrite")
    for _ in range(SYNC_ROUNDS):
        try:
            old, dropped = _drop_duplicates(table)
            repaired += dropped
            diff = diff_rows(old, keys)
            if not any(diff.counts().values()):
                break
            merged = _merge(table, diff, batches, everything)
        except Exception as exc:
            if not _preempted(exc):
                raise
            continue  # another process committed first: read the table again
        changes["rows_added"] += merged.num_inserted_rows or 0
        changes["rows_removed"] += merged.num_deleted_rows or 0
        changes["rows_updated"] += merged.num_updated_rows or 0
    else:
        raise ValueError(
            f"table {table_name}: still not the rows synced after {SYNC_ROUNDS} writes: another process "
            "keeps writing it; stop it, then materialize this asset again"
        )
    index = _retried(lambda: _sync_index(table, ann, dim, changes["rows_added"] + changes["rows_updated"]))
    if _compact_now(table, sum(changes.values()), index["index_trained"]):
        with warnings.catch_warnings():
            # LanceDB warns that retain=0 breaks readers of old versions: the caller chose it
            warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
            _retried(lambda: table.optimize(cleanup_older_than=cleanup_age(table, retain)))
    return {
        "table": table_name,
        "version": table.version,
        "rows": table.count_rows(),
        **changes,
        "ids_repaired": repaired,
        **index,
        "versions_kept": len(table.list_versions()),
        "disk_bytes": tree_bytes(as_path(db_dir) / f"{table_name}.lance"),
    }
