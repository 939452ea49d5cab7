"""A lane's embeddings: a file per bucket of notes, written group by group from the vector store,
rewritten only when its rows change, read by row group (only the groups of the rows asked for)."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rag_pipeline.lib.core import note_buckets, vector_column, write_table
from rag_pipeline.lib.embedding import LaneMismatch, LaneVectors, LaneWriter, VectorStore, lanefile, read_lane
from rag_pipeline.lib.retrieval.dense import dense_scores

DIM = 8


@pytest.fixture
def lane(tmp_path):
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(100, DIM)).astype(np.float32)
    table = pa.table({"chunk_id": [f"c{i}" for i in range(100)], "vector": vector_column(matrix)})
    path = tmp_path / "lane.parquet"
    write_table(table, path, row_group_size=16)
    return LaneVectors([path], "vector", DIM), matrix


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


def write_lane(directory, ids, notes, hashes, ctx_hashes, store):
    return LaneWriter(directory, ids, notes, hashes, ctx_hashes, store.embedding_version, store.dim).write(
        store
    )


def _lane_world(tmp_path, monkeypatch):
    monkeypatch.setattr(lanefile, "ROW_GROUP", 4)
    monkeypatch.setattr(lanefile, "BUCKETS", 2)
    store = VectorStore(tmp_path / "vectors", "test-v1", DIM)
    rng = np.random.default_rng(1)
    plain = rng.normal(size=(20, DIM)).astype(np.float32)
    plain /= np.linalg.norm(plain, axis=1, keepdims=True)
    ctx = plain[::-1].copy()
    hashes, ctx_hashes = [f"{i:032x}" for i in range(20)], [f"{i + 100:032x}" for i in range(20)]
    store.put(hashes + ctx_hashes, np.concatenate([plain, ctx]))
    notes = [f"note-{i // 2}" for i in range(20)]  # two chunks per note
    return store, plain, ctx, hashes, ctx_hashes, notes


def test_a_lane_is_written_by_bucket_group_by_group_and_read_in_chunk_order(tmp_path, monkeypatch):
    store, plain, ctx, hashes, ctx_hashes, notes = _lane_world(tmp_path, monkeypatch)
    ids = [f"c{i}" for i in range(20)]
    lane = tmp_path / "lane.parquet"
    problems, written = write_lane(lane, ids, notes, hashes, ctx_hashes, store)
    assert (problems, written) == ([], 2)
    buckets = note_buckets(notes, lanefile.BUCKETS)
    for b, path in enumerate(lanefile.bucket_paths(lane)):
        table = pq.read_table(path)
        mine = [i for i in range(20) if buckets[i] == b]
        assert table.column("chunk_id").to_pylist() == [ids[i] for i in mine]  # the chunks' order
        assert pq.ParquetFile(path).num_row_groups == -(-len(mine) // 4)
        assert table.schema.metadata[b"embedding_version"] == b"test-v1"
    assert sorted(pd.read_parquet(lane)["chunk_id"]) == sorted(ids)  # pandas reads the directory
    order = ids[::-1]  # any order the caller asks for
    vectors, ctx_vectors = read_lane(lane, DIM, order, contextual=True)
    assert np.array_equal(np.asarray(vectors), plain[::-1])
    assert np.array_equal(ctx_vectors[np.array([0, 19])], ctx[[19, 0]])
    with pytest.raises(LaneMismatch):
        read_lane(lane, DIM, ids[:-1], contextual=True)
    assert write_lane(tmp_path / "plain.parquet", ids, notes, hashes, None, store)[0] == []
    assert read_lane(tmp_path / "plain.parquet", DIM, ids, contextual=True)[1] is None


def test_an_edit_rewrites_only_its_notes_bucket_and_kept_buckets_keep_their_problems(tmp_path, monkeypatch):
    store, plain, _, hashes, ctx_hashes, notes = _lane_world(tmp_path, monkeypatch)
    bad = f"{999:032x}"
    store.put([bad], 3 * plain[:1])  # not unit length
    ids = [f"c{i}" for i in range(20)]
    buckets = note_buckets(notes, lanefile.BUCKETS)
    victim = int(np.flatnonzero(buckets == buckets[0])[-1])  # a row in note-0's bucket
    broken = hashes.copy()
    broken[victim] = bad
    lane = tmp_path / "lane.parquet"
    problems, _ = write_lane(lane, ids, notes, broken, ctx_hashes, store)
    name = f"bucket-{buckets[0]:02d}.parquet"
    assert len(problems) == 1 and problems[0].startswith(f"vector {name} rows ")
    other = lanefile.bucket_paths(lane)[1 - buckets[0]]
    before = other.stat().st_mtime_ns
    assert write_lane(lane, ids, notes, broken, ctx_hashes, store) == (problems, 0)  # nothing changed
    edited = broken.copy()
    edited[0] = hashes[1]  # note-0's first chunk now embeds another text
    assert write_lane(lane, ids, notes, edited, ctx_hashes, store) == (problems, 1)
    assert other.stat().st_mtime_ns == before
    assert pq.read_table(lanefile.bucket_paths(lane)[buckets[0]]).column("text_hash")[0].as_py() == hashes[1]


def test_the_one_file_layout_of_earlier_versions_is_replaced(tmp_path, monkeypatch):
    store, _, _, hashes, _, notes = _lane_world(tmp_path, monkeypatch)
    lane = tmp_path / "lane.parquet"
    lane.write_bytes(b"an embeddings file of embeddings-v2")
    write_lane(lane, [f"c{i}" for i in range(20)], notes, hashes, None, store)
    assert lane.is_dir() and len(list(lane.glob("bucket-*.parquet"))) == 2


def test_a_bucket_written_again_takes_the_vectors_its_file_holds_and_needs_only_new_ones(
    tmp_path, monkeypatch
):
    store, plain, _, hashes, _, notes = _lane_world(tmp_path, monkeypatch)
    ids = [f"c{i}" for i in range(20)]
    lane = tmp_path / "lane.parquet"
    write_lane(lane, ids, notes, hashes, None, store)
    empty = VectorStore(tmp_path / "other", "test-v1", DIM)  # holds nothing the files hold
    new = f"{777:032x}"
    empty.put([new], plain[:1])
    edited = hashes.copy()
    edited[0] = new
    writer = LaneWriter(lane, ids, notes, edited, None, "test-v1", DIM)
    assert writer.needed() == [0]  # the one vector no file holds
    assert writer.write(empty) == ([], 1)
    vectors, _ = read_lane(lane, DIM, ids, contextual=False)
    assert np.array_equal(np.asarray(vectors), np.concatenate([plain[:1], plain[1:]]))
    assert LaneWriter(lane, ids, notes, edited, None, "test-v2", DIM).needed() == list(range(20))


def test_buckets_are_read_from_the_store_together_up_to_the_prefetch_budget(tmp_path, monkeypatch):
    store, plain, _, hashes, _, notes = _lane_world(tmp_path, monkeypatch)
    calls: list[int] = []
    real = VectorStore.vectors
    monkeypatch.setattr(VectorStore, "vectors", lambda self, h: calls.append(len(h)) or real(self, h))
    ids = [f"c{i}" for i in range(20)]
    write_lane(tmp_path / "together.parquet", ids, notes, hashes, None, store)
    assert calls == [20]  # both buckets in one read
    calls.clear()
    monkeypatch.setattr(lanefile, "PREFETCH_BYTES", 4 * DIM)  # a vector at a time: a read per bucket
    write_lane(tmp_path / "apart.parquet", ids, notes, hashes, None, store)
    assert sorted(calls) == sorted(np.bincount(note_buckets(notes, lanefile.BUCKETS)).tolist())
    together, _ = read_lane(tmp_path / "together.parquet", DIM, ids, contextual=False)
    apart, _ = read_lane(tmp_path / "apart.parquet", DIM, ids, contextual=False)
    assert np.array_equal(np.asarray(together), plain) and np.array_equal(np.asarray(apart), plain)


def test_a_full_scan_reads_each_row_group_once_in_the_files_order(tmp_path, monkeypatch):
    store, plain, _, hashes, _, notes = _lane_world(tmp_path, monkeypatch)
    ids = [f"c{i}" for i in range(20)]
    write_lane(tmp_path / "lane.parquet", ids, notes, hashes, None, store)
    vectors, _ = read_lane(tmp_path / "lane.parquet", DIM, ids, contextual=False)
    queries = plain[[3, 11]]
    scores = dense_scores(vectors, queries, block=4)
    assert vectors.groups_read == len(vectors.groups)  # a slice of 4 rows in chunk order spans both buckets
    assert np.array_equal(scores, dense_scores(plain, queries, block=4))
