"""The rows a served table holds: their schema, built from a strategy's chunks and vectors, and
checked batch by batch as a store reads them (any store: nothing here is LanceDB's)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.core import vector_column
from rag_pipeline.lib.serving.diff import MUTABLE

NORM_TOLERANCE = 1e-3
BATCH_ROWS = 4096  # rows built, checked and handed to the store at a time: a sync holds one batch


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
    `vectors` is indexed by position (an array, or a lane file read by row group), and so is `texts`
    when the frame leaves the texts out (a chunks file's column read by row group): a whole lane's
    rows are then never held at once."""

    def __init__(self, frame: pd.DataFrame, vectors, texts=None):
        if len(frame) != len(vectors):
            raise ValueError(f"serving rows: {len(frame)} chunks but {len(vectors)} vectors")
        self.frame, self.vectors, self.dim = frame.reset_index(drop=True), vectors, vectors.shape[1]
        self.texts = texts
        self.num_rows = len(frame)

    def keys(self) -> pd.DataFrame:
        return self.frame[["chunk_id", *MUTABLE]]

    def take(self, positions: np.ndarray) -> pa.Table:
        frame = self.frame.iloc[positions]
        if self.texts is not None:
            frame = frame.assign(text=self.texts[positions])
        return serving_rows(frame, self.vectors[positions])


class WholeRows(LazyRows):
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


def checked_batches(rows: pa.Table, schema: pa.Schema, table_name: str) -> Iterator[pa.RecordBatch]:
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


def as_rows(rows: pa.Table | LazyRows, table_name: str) -> LazyRows:
    """`rows` as `LazyRows`; a table without a proper `vector` field raises `ValueError` naming `table_name`."""
    try:
        return rows if isinstance(rows, LazyRows) else WholeRows(rows)
    except ValueError as exc:
        raise ValueError(f"table {table_name}: {exc}") from None


def row_reader(source: LazyRows, positions: np.ndarray, table_name: str) -> pa.RecordBatchReader:
    """The rows at `positions`, built and checked a batch at a time as the store reads them."""
    schema = serving_schema(source.dim)

    def built() -> Iterator[pa.RecordBatch]:
        for start in range(0, len(positions), BATCH_ROWS):
            part = source.take(positions[start : start + BATCH_ROWS])
            missing = [n for n in schema.names if n not in part.column_names]
            if missing:
                raise ValueError(f"table {table_name}: missing fields {missing}")
            yield from checked_batches(part.select(schema.names), schema, table_name)

    return pa.RecordBatchReader.from_batches(schema, built())
