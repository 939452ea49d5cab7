import numpy as np
import pytest

from rag_pipeline.lib.embedders import Embedder, EmbeddingError, HashingEmbedder
from rag_pipeline.lib.vectorstore import VectorStore, embed_cached


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
    for i in range(VectorStore.MAX_SEGMENTS + 2):
        embed_cached(a, sa, [f"text {i}"], "passage")
    assert len(list(sa.dir.glob("segment-*.parquet"))) <= VectorStore.MAX_SEGMENTS
    assert len(VectorStore(tmp_path, a.embedding_version, a.dim)) == VectorStore.MAX_SEGMENTS + 2
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
