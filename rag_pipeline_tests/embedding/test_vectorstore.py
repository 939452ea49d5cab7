from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rag_pipeline.lib.chunking import with_text_hashes
from rag_pipeline.lib.core import segments as segments
from rag_pipeline.lib.embedding import (
    Embedder,
    EmbeddingError,
    HashingEmbedder,
    Passages,
    VectorStore,
    embed_cached,
    passage_hashes,
    text_hashes,
)


class Counting(HashingEmbedder):
    query_prefix = "query: "

    def __init__(self):
        super().__init__(dim=64)
        self.calls: list[list[str]] = []

    def _embed(self, texts, kind):
        self.calls.append(list(texts))
        return super()._embed(texts, kind)


def test_only_missing_texts_are_embedded_and_survive_a_new_process(tmp_path):
    emb = Counting()
    store = VectorStore(tmp_path, emb.embedding_version, emb.dim)
    v1, hashes, n = embed_cached(emb, store, ["a", "b", "a"], "passage", batch_size=1)
    assert n == 2 and emb.calls == [["a"], ["b"]]
    assert np.allclose(v1[0], v1[2]) and np.allclose(np.linalg.norm(v1, axis=1), 1)
    reopened = VectorStore(tmp_path, emb.embedding_version, emb.dim)
    v2, _, n = embed_cached(emb, reopened, ["b", "c"], "passage")
    assert n == 1 and emb.calls[-1] == ["c"]
    assert np.array_equal(v2[0], v1[1])
    # with a query prefix, a query is a different embedded text than the same passage
    _, qh, n = embed_cached(emb, reopened, ["a"], "query")
    assert n == 1 and qh[0] != hashes[0]


def test_versions_do_not_mix_and_compaction_keeps_everything(tmp_path):
    a, b = HashingEmbedder(dim=32), HashingEmbedder(dim=48)
    sa = VectorStore(tmp_path, a.embedding_version, a.dim)
    sb = VectorStore(tmp_path, b.embedding_version, b.dim)
    assert sa.dir != sb.dir
    for i in range(3 * VectorStore.FANOUT):
        embed_cached(a, sa, [f"text {i}"], "passage")
    assert len(sa.live()) < VectorStore.FANOUT
    assert len(VectorStore(tmp_path, a.embedding_version, a.dim)) == 3 * VectorStore.FANOUT
    assert len(sb) == 0


class Broken(Embedder):
    backend, model, model_digest, dim = "broken", "m", "0", 4

    def __init__(self, result):
        self.result = result

    def _embed(self, texts, kind):
        return self.result


def test_bad_vectors_are_never_stored(tmp_path):
    nan = np.ones((2, 4))
    nan[1, 2] = np.nan
    for result, message in [
        (nan, "text #1: broken: NaN, infinite or zero vector"),
        (np.ones((1, 4)), "asked for 2 vectors, got 1"),
    ]:
        emb = Broken(result)
        store = VectorStore(tmp_path, emb.embedding_version, emb.dim)
        with pytest.raises(EmbeddingError, match=message):
            embed_cached(emb, store, ["x", "y"], "passage")
        assert len(VectorStore(tmp_path, emb.embedding_version, emb.dim)) == 0


class FailsAfter(HashingEmbedder):
    """Embeds `limit` texts, then fails as a killed or crashed backend would."""

    def __init__(self, limit: int):
        super().__init__(dim=16)
        self.limit, self.seen = limit, []

    def _embed(self, texts, kind):
        if len(self.seen) + len(texts) > self.limit:
            raise RuntimeError("backend died")
        self.seen += texts
        return super()._embed(texts, kind)


def test_an_interrupted_run_resumes_without_re_embedding_what_was_flushed(tmp_path):
    texts = [f"text {i}" for i in range(10)]
    crashing = FailsAfter(limit=5)
    store = VectorStore(tmp_path, crashing.embedding_version, crashing.dim)
    with pytest.raises(RuntimeError, match="backend died"):
        embed_cached(crashing, store, texts, "passage", batch_size=1, flush_every=2)
    # every vector checked before the failure reached the disk (a killed process keeps the
    # flushes made every `flush_every` texts)
    assert len(VectorStore(tmp_path, crashing.embedding_version, crashing.dim)) == 5
    resumed = FailsAfter(limit=100)
    _, _, embedded = embed_cached(
        resumed, VectorStore(tmp_path, resumed.embedding_version, resumed.dim), texts, "passage"
    )
    assert embedded == 5 and resumed.seen == texts[5:]


def filled_store(tmp_path, segments: int, rows: int) -> tuple[VectorStore, list[str], np.ndarray]:
    store = VectorStore(tmp_path, "test-version", 8)
    hashes = [f"{i:032x}" for i in range(segments * rows)]
    vectors = np.random.default_rng(0).standard_normal((len(hashes), 8)).astype(np.float32)
    for s in range(segments):
        store.put(hashes[s * rows : (s + 1) * rows], vectors[s * rows : (s + 1) * rows])
    return store, hashes, vectors


def test_the_store_reads_its_index_and_the_row_groups_asked_for_never_every_vector(tmp_path, monkeypatch):
    monkeypatch.setattr(VectorStore, "row_group_size", 100)
    _, hashes, vectors = filled_store(tmp_path, segments=3, rows=1000)
    segments._OPENED.clear()  # as in a new process
    reads: list[tuple[str, tuple]] = []
    real_read, real_group = pq.ParquetFile.read, pq.ParquetFile.read_row_group
    monkeypatch.setattr(pq, "read_table", None)  # nothing may load a whole segment
    monkeypatch.setattr(
        pq.ParquetFile,
        "read",
        lambda f, columns: reads.append(("read", tuple(columns))) or real_read(f, columns),
    )
    monkeypatch.setattr(
        pq.ParquetFile,
        "read_row_group",
        lambda f, i, columns: (
            reads.append((f"group {i}", tuple(columns))) or real_group(f, i, columns=columns)
        ),
    )
    store = VectorStore(tmp_path, "test-version", 8)
    assert reads == []  # opening reads nothing; the first look-up reads the index
    asked = [hashes[5], hashes[1999], hashes[2950], hashes[2999], "f" * 32]
    assert store.contains(asked).tolist() == [True, True, True, True, False]
    assert reads == [("read", ("text_hash",))] * 3  # the index: one column of each segment
    reads.clear()
    assert VectorStore(tmp_path, "test-version", 8).contains(asked).sum() == 4
    assert reads == []  # a segment's index is read once per process
    assert np.array_equal(store.vectors(asked[:4]), vectors[[5, 1999, 2950, 2999]])
    # of 10 row groups of 100 in each segment, the one holding rows asked for (5; 999; 950 and 999)
    assert sorted(reads) == [("group 0", ("vector",))] + [("group 9", ("vector",))] * 2
    with pytest.raises(KeyError, match="1 texts not in"):
        store.vectors(asked)


class Clock:
    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.parametrize(
    ("flush_every", "clock", "flushes"),
    [(4, Clock(0.0), [4, 4, 2]), (1000, Clock(4.0), [3, 3, 3, 1])],  # by count; by time (10 s, 4 s a batch)
)
def test_vectors_are_flushed_every_n_texts_or_every_few_seconds(tmp_path, flush_every, clock, flushes):
    emb = HashingEmbedder(dim=16)
    store = VectorStore(tmp_path, emb.embedding_version, emb.dim)
    sizes: list[int] = []
    real_put = store.put
    store.put = lambda hashes, vectors: sizes.append(len(hashes)) or real_put(hashes, vectors)
    texts = [f"text {i}" for i in range(10)]
    embed_cached(
        emb, store, texts, "passage", batch_size=1, flush_every=flush_every, flush_seconds=10.0, clock=clock
    )
    assert sizes == flushes
    assert len(VectorStore(tmp_path, emb.embedding_version, emb.dim)) == 10


def segment_files(store: VectorStore) -> list[Path]:
    return sorted(store.dir.glob("segment-*.parquet"))


@pytest.mark.parametrize("crash_at", ["writing the new segment", "deleting the replaced ones"])
def test_a_crash_during_compaction_loses_no_vector(tmp_path, monkeypatch, crash_at):
    store, hashes, vectors = filled_store(tmp_path, segments=VectorStore.FANOUT - 1, rows=3)

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed")

    if crash_at == "writing the new segment":  # the put's own segment is written, compaction's is not
        monkeypatch.setattr(segments, "write_batches", crash)
        with pytest.raises(KeyboardInterrupt):
            store.put(["e" * 32], np.ones((1, 8), np.float32))  # a full tier of small segments: a merge
    else:
        store.put(["e" * 32], np.ones((1, 8), np.float32))  # the merge deletes nothing
        monkeypatch.setattr(Path, "unlink", crash)
        monkeypatch.setattr(VectorStore, "retire_seconds", 0)
        with pytest.raises(KeyboardInterrupt):
            store.compact()  # the next compaction deletes the segments the merged one replaces
    monkeypatch.undo()
    monkeypatch.setattr(VectorStore, "retire_seconds", 0)
    reopened = VectorStore(tmp_path, "test-version", 8)
    assert len(reopened) == len(hashes) + 1
    assert np.array_equal(reopened.vectors(hashes), vectors)
    merged = crash_at != "writing the new segment"
    assert len(segment_files(reopened)) == VectorStore.FANOUT + merged  # nothing was deleted
    assert len(reopened.live()) == (1 if merged else VectorStore.FANOUT)
    reopened.compact()
    reopened.compact()  # the first merges (or retires), the second retires what the first replaced
    assert segment_files(reopened) == reopened.live() and len(reopened.live()) == 1
    assert np.array_equal(VectorStore(tmp_path, "test-version", 8).vectors(hashes), vectors)


def test_compaction_folds_a_full_tier_of_small_segments_and_leaves_large_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(VectorStore, "merge_bytes", 4096)
    store, hashes, vectors = filled_store(tmp_path, segments=2, rows=200)  # over 4096 bytes each
    large = sorted(store.dir.glob("segment-*.parquet"))
    small = [f"a{i:031x}" for i in range(VectorStore.FANOUT)]
    for h in small:
        store.put([h], np.ones((1, 8), np.float32))
    files = store.live()
    assert len(files) == 3 and files[:2] == large  # the small ones became one, the large stayed
    assert np.array_equal(VectorStore(tmp_path, "test-version", 8).vectors(hashes), vectors)
    assert VectorStore(tmp_path, "test-version", 8).contains(small).all()


def test_a_merge_streams_row_groups_and_keeps_one_row_per_hash(tmp_path, monkeypatch):
    """Segments of several row groups, a hash written twice: the merged segment holds every hash
    once (its first vector), in regrouped row groups, and no segment was loaded whole."""
    monkeypatch.setattr(VectorStore, "row_group_size", 4)
    store, hashes, vectors = filled_store(tmp_path, segments=VectorStore.FANOUT - 1, rows=5)
    monkeypatch.setattr(pq, "read_table", None)  # a merge reads row group by row group
    store.put([hashes[7], "f" * 32], np.zeros((2, 8), np.float32))  # the tier is full: a merge
    (merged,) = store.live()
    file = pq.ParquetFile(merged)
    assert file.metadata.num_rows == len(hashes) + 1
    assert max(file.metadata.row_group(g).num_rows for g in range(file.num_row_groups)) >= 4
    reopened = VectorStore(tmp_path, "test-version", 8)
    assert np.array_equal(reopened.vectors(hashes), vectors)  # the first write of hashes[7] wins
    assert not reopened.vectors(["f" * 32]).any()


class Prefixed(HashingEmbedder):
    passage_prefix = "passage: "


def test_a_passage_is_keyed_by_the_chunks_text_hash_only_when_the_embedder_adds_no_prefix():
    chunks = with_text_hashes(
        pd.DataFrame({"text": ["一つ目の文。", "二つ目の文。"], "heading_path": ["T > A", "T > B"]})
    )
    for contextual in (False, True):
        texts = Passages(chunks["text"].tolist(), chunks["heading_path"].tolist(), contextual)
        listed = [texts[i] for i in range(len(texts))]
        for embedder in (HashingEmbedder(dim=8), Prefixed(dim=8)):
            assert passage_hashes(embedder, chunks, texts) == text_hashes(embedder, listed, "passage")
        kept = chunks["text_hash"].tolist() + (chunks["ctx_text_hash"].tolist() if contextual else [])
        assert passage_hashes(HashingEmbedder(dim=8), chunks, texts) == kept
        assert not set(passage_hashes(Prefixed(dim=8), chunks, texts)) & set(kept)
