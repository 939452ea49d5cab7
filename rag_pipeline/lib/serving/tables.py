"""The served index: one embedded LanceDB table per chunking strategy, synced incrementally.

A sync is one LanceDB commit (merge on chunk_id), so a build killed half-way leaves the
previous version readable. Vectors are L2-normalised, so the index uses the cosine metric.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from datetime import timedelta

import lancedb
import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, as_path, storage_options, tree_bytes, vector_column
from rag_pipeline.lib.serving.live import cleanup_age
from rag_pipeline.lib.serving.search import DEFAULT_ANN, AnnConfig, index_kind, vector_index

# a chunk_id keeps its text; these are what can change under it (the vector follows embedding_version)
MUTABLE = ("access", "commit", "embedding_version")
# readers still on a version this recent keep working while a sync cleans up
DEFAULT_RETAIN = timedelta(minutes=10)
NORM_TOLERANCE = 1e-3


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


def _checked_batches(rows: pa.Table, schema: pa.Schema, table_name: str) -> Iterator[pa.RecordBatch]:
    """The rows cast to the table's schema, batch by batch; a bad batch stops the sync uncommitted."""
    for batch in rows.to_batches(max_chunksize=4096):
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


def _changes(table: lancedb.table.Table, rows: pa.Table) -> dict[str, int]:
    """How many rows a merge would add, remove and update (chunk_ids only, no vectors read)."""
    cols = ["chunk_id", *MUTABLE]
    old = table.search().select(cols).to_arrow().to_pandas()
    new = rows.select(cols).to_pandas()
    for frame in (old, new):
        frame["access"] = frame["access"].map(tuple)
    both = old.merge(new, on="chunk_id", how="outer", suffixes=("_old", "_new"), indicator=True)
    matched = both[both["_merge"] == "both"]
    changed = np.zeros(len(matched), dtype=bool)
    for col in MUTABLE:
        changed |= (matched[f"{col}_old"] != matched[f"{col}_new"]).to_numpy()
    return {
        "rows_added": int((both["_merge"] == "right_only").sum()),
        "rows_removed": int((both["_merge"] == "left_only").sum()),
        "rows_updated": int(changed.sum()),
    }


def _drop_duplicates(table: lancedb.table.Table) -> int:
    """Delete every row of a chunk_id the table holds more than once (left by an older version or a
    crash), so the merge that follows writes it once again; returns how many ids were repaired."""
    ids = pd.Series(table.search().select(["chunk_id"]).to_arrow()["chunk_id"].to_pylist(), dtype=object)
    twice = sorted(set(ids[ids.duplicated()]))
    for start in range(0, len(twice), 500):
        quoted = ", ".join("'" + c.replace("'", "''") + "'" for c in twice[start : start + 500])
        table.delete(f"chunk_id IN ({quoted})")
    return len(twice)


def _open_or_create(db: lancedb.DBConnection, table_name: str, schema: pa.Schema) -> lancedb.table.Table:
    try:
        return db.open_table(table_name)
    except ValueError:  # LanceDB's "table not found"
        return db.create_table(table_name, schema=schema)


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


def sync_table(
    db_dir: str | AnyPath,
    table_name: str,
    rows: pa.Table,
    *,
    ann: AnnConfig = DEFAULT_ANN,
    retain: timedelta = DEFAULT_RETAIN,
) -> dict:
    """Make table `table_name` hold exactly `rows` (see `serving_rows`), touching only what changed.

    New chunk_ids are inserted, missing ones deleted, and rows whose access, commit or
    embedding_version differ rewritten, all in one commit; unchanged rows are not rewritten.
    Then the index is kept in step and versions older than `retain` are removed, but never one as
    recent as the version tagged `live` (see `live.py`).
    Returns metadata for the asset.
    """
    if "vector" not in rows.column_names or not pa.types.is_fixed_size_list(rows.schema.field("vector").type):
        raise ValueError(f"table {table_name}: field 'vector' must be a fixed-size list of float32")
    dim = rows.schema.field("vector").type.list_size
    schema = serving_schema(dim)
    missing = [n for n in schema.names if n not in rows.column_names]
    if missing:
        raise ValueError(f"table {table_name}: missing fields {missing}")
    rows = rows.select(schema.names)
    ids = rows.column("chunk_id")
    if len(ids.unique()) != len(ids):
        raise ValueError(f"table {table_name}: duplicate chunk_ids in the rows")

    db = lancedb.connect(str(db_dir), storage_options=storage_options(db_dir))
    table = _open_or_create(db, table_name, schema)
    batches = pa.RecordBatchReader.from_batches(schema, _checked_batches(rows, schema, table_name))
    if table.schema.field("vector").type != schema.field("vector").type:
        # another embedder's dimension: the whole table is replaced, still as one new version
        changes = {"rows_added": rows.num_rows, "rows_removed": table.count_rows(), "rows_updated": 0}
        repaired = 0
        table = db.create_table(table_name, data=batches, schema=schema, mode="overwrite")
    else:
        repaired = _drop_duplicates(table)
        changes = _changes(table, rows)
        if any(changes.values()):
            differs = " OR ".join(f"target.{c} != source.{c}" for c in MUTABLE)
            merged = (
                table.merge_insert("chunk_id")
                .when_matched_update_all(where=differs)
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete()
                .execute(batches)
            )
            changes = {
                "rows_added": merged.num_inserted_rows,
                "rows_removed": merged.num_deleted_rows,
                "rows_updated": merged.num_updated_rows,
            }
    index = _sync_index(table, ann, dim, changes["rows_added"] + changes["rows_updated"])
    if any(changes.values()) or index["index_trained"]:
        with warnings.catch_warnings():
            # LanceDB warns that retain=0 breaks readers of old versions: the caller chose it
            warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
            table.optimize(cleanup_older_than=cleanup_age(table, retain))
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
