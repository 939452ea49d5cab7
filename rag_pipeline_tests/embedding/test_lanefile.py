"""A lane's embeddings file read by row group: the rows asked for, and only their groups read."""

import numpy as np
import pyarrow as pa
import pytest

from rag_pipeline.lib.core import vector_column, write_table
from rag_pipeline.lib.embedding import LaneVectors

DIM = 8


@pytest.fixture
def lane(tmp_path):
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(100, DIM)).astype(np.float32)
    table = pa.table({"chunk_id": [f"c{i}" for i in range(100)], "vector": vector_column(matrix)})
    path = tmp_path / "lane.parquet"
    write_table(table, path, row_group_size=16)
    return LaneVectors(path, "vector", DIM), matrix


def test_positions_slices_and_masks_read_the_rows_asked_for(lane):
    vectors, matrix = lane
    assert len(vectors) == 100 and vectors.shape == (100, DIM)
    picked = np.array([97, 3, 50, 3])
    assert np.array_equal(vectors[picked], matrix[picked])
    assert np.array_equal(vectors[10:40], matrix[10:40])
    mask = np.zeros(100, bool)
    mask[[5, 80]] = True
    assert np.array_equal(vectors[mask], matrix[mask])
    assert np.array_equal(np.asarray(vectors), matrix)
    assert vectors[np.array([], np.int64)].shape == (0, DIM)
    with pytest.raises(IndexError, match="out of range"):
        vectors[np.array([100])]


def test_only_the_groups_holding_the_rows_are_read(lane):
    vectors, _ = lane
    vectors[np.array([1, 2, 15])]  # rows 0-15 are the first group
    assert vectors.groups_read == 1
    vectors[np.array([16, 99])]
    assert vectors.groups_read == 3
