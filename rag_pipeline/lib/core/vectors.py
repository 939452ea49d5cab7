"""Float32 vector matrices as Arrow fixed-size list columns, and back."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def vector_column(vectors: np.ndarray) -> pa.FixedSizeListArray:
    """float32 matrix -> Parquet-friendly fixed-size list column."""
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])


def vector_matrix(column: pa.ChunkedArray | pa.Array, dim: int) -> np.ndarray:
    """Inverse of `vector_column`."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks else pa.array([], pa.list_(pa.float32(), dim))
    values = column.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.float32).reshape(-1, dim)
