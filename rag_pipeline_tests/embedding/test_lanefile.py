"""A lane's embeddings file: written group by group from the vector store, read by row group (the
rows asked for, and only their groups read)."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rag_pipeline.lib.core import vector_column, write_table
from rag_pipeline.lib.embedding import LaneVectors, VectorStore, lanefile, write_lane

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


def test_a_lane_is_written_group_by_group_from_the_store(tmp_path, monkeypatch):
    monkeypatch.setattr(lanefile, "ROW_GROUP", 4)
    store = VectorStore(tmp_path / "vectors", "test-v1", DIM)
    rng = np.random.default_rng(1)
    plain = rng.normal(size=(10, DIM)).astype(np.float32)
    plain /= np.linalg.norm(plain, axis=1, keepdims=True)
    ctx = plain[::-1].copy()
    ctx[6] *= 3  # not unit length: row 3 of the contextual vectors
    hashes, ctx_hashes = [f"{i:032x}" for i in range(10)], [f"{i + 100:032x}" for i in range(10)]
    store.put(hashes + ctx_hashes, np.concatenate([plain, ctx]))
    path = tmp_path / "lane.parquet"
    ids = [f"c{i}" for i in range(10)]
    problems = write_lane(path, ids, hashes, ctx_hashes, store)
    assert problems == ["vector_ctx rows 4-7: 1 vectors are not unit length"]
    table = pq.read_table(path)
    assert pq.ParquetFile(path).num_row_groups == 3
    assert table.column("chunk_id").to_pylist() == ids and table.column("text_hash").to_pylist() == hashes
    assert table.schema.metadata[b"embedding_version"] == b"test-v1"
    assert np.array_equal(np.asarray(LaneVectors(path, "vector", DIM)), plain)
    assert np.array_equal(np.asarray(LaneVectors(path, "vector_ctx", DIM)), ctx)
    assert write_lane(tmp_path / "plain.parquet", ids, hashes, None, store) == []
    assert "vector_ctx" not in pq.read_schema(tmp_path / "plain.parquet").names
