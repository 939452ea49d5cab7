"""A lane's embeddings file, written in row groups and read by row group on demand.

Retrieval after an edit scores only the new chunks, and the index writes only the new rows: each
reads the row groups holding them, not the whole file. A full scan reads one group at a time, so
it never holds more than a group beyond what the caller keeps.
"""

from __future__ import annotations

import numpy as np

from rag_pipeline.lib.core import AnyPath, parquet_file, vector_matrix

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
