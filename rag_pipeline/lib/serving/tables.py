"""The served index: one embedded LanceDB table per chunking strategy, synced incrementally.

A sync is one LanceDB commit (merge on chunk_id), so a build killed half-way leaves the
previous version readable. Vectors are L2-normalised, so the index uses the cosine metric.

Several processes, on several machines, may sync one table at once, with no lock: each sync reads
the table again after it writes and writes again until the table holds exactly its rows, each
chunk_id once. Whichever writes last checks last, so the table ends as one of them left it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, as_path, tree_bytes, vector_column
from rag_pipeline.lib.serving.diff import MUTABLE, diff_rows, values
from rag_pipeline.lib.serving.live import cleanup_age
from rag_pipeline.lib.serving.search import DEFAULT_ANN, AnnConfig, connect, index_kind, vector_index

if TYPE_CHECKING:  # lancedb takes seconds to import: loaded where a table is opened
    import lancedb

# readers still on a version this recent keep working while a sync cleans up
DEFAULT_RETAIN = timedelta(minutes=10)
NORM_TOLERANCE = 1e-3
BATCH_ROWS = 4096  # rows built, checked and handed to LanceDB at a time: a sync holds one batch


def serving_schema(dim: int) -> pa.Schema:
    text, texts = pa.string(), pa.list_(pa.string())
    columns = {"chunk_id": text, "note": text, "text": text, "vector": pa.list_(pa.float32(), dim)}
    columns |= {"access": texts, "heading_path": text, "commit": text, "embedding_version": text}
    return pa.schema([pa.field(name, type_, nullable=False) for name, type_ in columns.items()])


def serving_rows(frame: pd.DataFrame, vectors: np.ndarray) -> pa.Table:
    """A strategy's chunks (chunk_id, note, text, heading_path, commit, embedding_version,
    access: a list of group names, empty for public notes) and their vectors, row for row."""
    schema = serving_schema(vectors.shape[1])
    missing = [n for n in schema.names if n != "vector" and n not in frame.columns]
    if missing:
        raise ValueError(f"serving rows: missing columns {missing}")
    if len(frame) != len(vectors):
        raise ValueError(f"serving rows: {len(frame)} chunks but {len(vectors)} vectors")
    columns = {n: frame[n].tolist() for n in schema.names if n != "vector"}
    columns["access"] = [list(a) for a in columns["access"]]
    return pa.table({**columns, "vector": vector_column(vectors)}).select(schema.names).cast(schema)


class LazyRows:
    """The rows a table should hold, built only where a sync needs them: `keys()` (chunk_id and
    the MUTABLE columns) for every row, `take(positions)` (every field) for the rows it writes.
    `vectors` is indexed by position (an array, or a lane file read by row group)."""

    def __init__(self, frame: pd.DataFrame, vectors):
        if len(frame) != len(vectors):
            raise ValueError(f"serving rows: {len(frame)} chunks but {len(vectors)} vectors")
        self.frame, self.vectors, self.dim = frame.reset_index(drop=True), vectors, vectors.shape[1]
        self.num_rows = len(frame)

    def keys(self) -> pd.DataFrame:
        return self.frame[["chunk_id", *MUTABLE]]

    def take(self, positions: np.ndarray) -> pa.Table:
        return serving_rows(self.frame.iloc[positions], self.vectors[positions])


class _TableRows(LazyRows):
    """Rows given whole, as a table."""

    def __init__(self, rows: pa.Table):
        if "vector" not in rows.column_names or not pa.types.is_fixed_size_list(
            rows.schema.field("vector").type
        ):
            raise ValueError("field 'vector' must be a fixed-size list of float32")
        self.rows, self.dim, self.num_rows = rows, rows.schema.field("vector").type.list_size, rows.num_rows

    def keys(self) -> pd.DataFrame:
        return self.rows.select(["chunk_id", *MUTABLE]).to_pandas()

    def take(self, positions: np.ndarray) -> pa.Table:
        return self.rows.take(pa.array(positions, pa.int64()))


def _checked_batches(rows: pa.Table, schema: pa.Schema, table_name: str) -> Iterator[pa.RecordBatch]:
    """The rows cast to the table's schema, batch by batch; a bad batch stops the sync uncommitted."""
    for batch in rows.to_batches(max_chunksize=BATCH_ROWS):
        for name in schema.names:
            if batch.column(name).null_count:
                raise ValueError(f"table {table_name}: field {name!r} has nulls")
        vectors = batch.column("vector").flatten().to_numpy(zero_copy_only=False).reshape(batch.num_rows, -1)
        norms = np.linalg.norm(vectors, axis=1)
        bad = ~np.isfinite(norms) | (np.abs(norms - 1) > NORM_TOLERANCE)
        if bad.any():
            chunk_id = batch.column("chunk_id")[int(np.argmax(bad))].as_py()
            raise ValueError(f"table {table_name}: field 'vector' of chunk {chunk_id} is not L2-normalised")
        yield batch.cast(schema)


def _id_list(ids: list[str]) -> str:
    return "chunk_id IN (" + ", ".join("'" + c.replace("'", "''") + "'" for c in ids) + ")"


def duplicate_chunk_ids(table: lancedb.table.Table) -> int:
    """How many chunk_ids the table holds more than once (0 for a sound table)."""
    ids = values(table.search().select(["chunk_id"]).limit(None).to_arrow(), "chunk_id")
    return int(ids[ids.duplicated()].nunique())


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
        config, params = ann.index(rows, dim)
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
    try:
        source = rows if isinstance(rows, LazyRows) else _TableRows(rows)
    except ValueError as exc:
        raise ValueError(f"table {table_name}: {exc}") from None
    dim = source.dim
    schema = serving_schema(dim)
    keys = source.keys()
    if keys["chunk_id"].duplicated().any():
        raise ValueError(f"table {table_name}: duplicate chunk_ids in the rows")

    def batches(positions: np.ndarray) -> pa.RecordBatchReader:
        """The rows at `positions`, built and checked a batch at a time as LanceDB reads them."""

        def built() -> Iterator[pa.RecordBatch]:
            for start in range(0, len(positions), BATCH_ROWS):
                part = source.take(positions[start : start + BATCH_ROWS])
                missing = [n for n in schema.names if n not in part.column_names]
                if missing:
                    raise ValueError(f"table {table_name}: missing fields {missing}")
                yield from _checked_batches(part.select(schema.names), schema, table_name)

        return pa.RecordBatchReader.from_batches(schema, built())

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
