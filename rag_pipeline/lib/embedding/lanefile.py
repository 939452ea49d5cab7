"""A lane's embeddings file, written a row group at a time and read by row group on demand.

It is written from the vector store group by group, so memory holds one group, never the lane.
Retrieval after an edit scores only the new chunks, and the index writes only the new rows: each
reads the row groups holding them, not the whole file. A full scan reads one group at a time, so
it never holds more than a group beyond what the caller keeps.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, parquet_file, vector_column, vector_matrix, write_batches
from rag_pipeline.lib.embedding.embedders import vector_problems
from rag_pipeline.lib.embedding.vectorstore import VectorStore

ROW_GROUP = 4096  # rows per group: a group of 384-dim plain and contextual vectors is about 12 MB


class LaneVectors:
    """The vectors of one column (`vector` or `vector_ctx`) of a lane's embeddings file, indexed
    like a (rows, dim) float32 array: `lane[positions]`, `lane[start:stop]`, `len(lane)`."""

    def __init__(self, path: AnyPath, column: str, dim: int):
        self.path, self.column, self.dim = path, column, dim
        # kept open: the groups read are those of the file checked, even if a later run replaces it
        self.file = parquet_file(path)
        meta = self.file.metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        self.starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        self.groups_read = 0

    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.dim)

    def __getitem__(self, rows: slice | np.ndarray | list[int]) -> np.ndarray:
        positions = np.arange(len(self))[rows] if isinstance(rows, slice) else np.asarray(rows)
        if positions.dtype == bool:
            positions = np.flatnonzero(positions)
        positions = positions.astype(np.int64)
        out = np.empty((len(positions), self.dim), np.float32)
        if not len(positions):
            return out
        if positions.min() < 0 or positions.max() >= len(self):
            raise IndexError(f"{self.path}: row out of range 0..{len(self) - 1}")
        group = np.searchsorted(self.starts, positions, side="right") - 1
        for g in np.unique(group):
            at = np.flatnonzero(group == g)
            matrix = vector_matrix(
                self.file.read_row_group(int(g), columns=[self.column]).column(0), self.dim
            )
            self.groups_read += 1
            out[at] = matrix[positions[at] - self.starts[g]]
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)


def write_lane(
    path: AnyPath,
    chunk_ids: list[str],
    hashes: list[str],
    ctx_hashes: list[str] | None,
    store: VectorStore,
) -> list[str]:
    """The embeddings file of a lane: `chunk_id`, `text_hash`, `vector` (and `text_hash_ctx`,
    `vector_ctx` when `ctx_hashes` are given), row for row with `chunk_ids`, the vectors taken from
    `store` a group at a time. Returns the vectors' problems (`vector_problems`), naming the rows."""
    vector = pa.list_(pa.float32(), store.dim)
    fields = [("chunk_id", pa.string()), ("text_hash", pa.string()), ("vector", vector)]
    if ctx_hashes is not None:
        fields += [("text_hash_ctx", pa.string()), ("vector_ctx", vector)]
    metadata = {"embedding_version": store.embedding_version, "dim": str(store.dim)}
    schema = pa.schema(fields, metadata=metadata)
    problems: list[str] = []

    def checked(column: list[str], start: int, what: str) -> pa.FixedSizeListArray:
        matrix = store.vectors(column[start : start + ROW_GROUP])
        rows = f"rows {start}-{start + len(matrix) - 1}"
        problems.extend(f"{what} {rows}: {p}" for p in vector_problems(matrix, store.dim))
        return vector_column(matrix)

    def groups():
        for start in range(0, len(chunk_ids), ROW_GROUP):
            stop = start + ROW_GROUP
            columns = [chunk_ids[start:stop], hashes[start:stop], checked(hashes, start, "vector")]
            if ctx_hashes is not None:
                columns += [ctx_hashes[start:stop], checked(ctx_hashes, start, "vector_ctx")]
            yield pa.table(columns, schema=schema)

    write_batches(groups(), schema, path, **VectorStore.write_options)
    return problems
