"""The reranking stage against a local protocol stub of Text Embeddings Inference's `/rerank` and
the Cohere-style `/v1/rerank` (neither server can be installed here)."""

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from rag_pipeline.definitions import assets, resources_from_env
from rag_pipeline.lib.retrieval import HttpReranker, Queries, RerankError, RetrievalSettings, retrieve
from rag_pipeline_tests.fakes.reranker import FakeReranker
from rag_pipeline_tests.support.indexes import small_index


@pytest.mark.parametrize("protocol", ["tei", "cohere"])
def test_scores_come_back_in_the_order_asked(protocol):
    with FakeReranker() as server:
        scores = HttpReranker(server.url, "bge-reranker", protocol).scores("abc", ["zzz", "abc", "a"])
        assert scores == [0.0, 3.0, 1.0]


def test_a_missing_score_is_an_error():
    with FakeReranker(drop_one=True) as server, pytest.raises(RerankError, match="asked to score 3 texts"):
        HttpReranker(server.url).scores("abc", ["zzz", "abc", "a"])


def test_rerank_reorders_the_top_candidates_only():
    index = small_index()
    with FakeReranker() as server:
        frame = retrieve(
            index,
            ["dense+rerank"],
            Queries(["q1"], np.array([[1, 0, 0]], np.float32), ["SQLSTATE 40P01"]),  # dense puts a first
            RetrievalSettings(rerank_k=2, context_k=1),
            HttpReranker(server.url),
        )
        assert len(server.calls) == 1 and len(server.calls[0]["texts"]) == 2
    reranked = frame[frame["retriever"] == "dense+rerank"]
    assert reranked["chunk_id"].tolist() == ["b", "a"]  # the reranker prefers the chunk holding 40P01


def test_settings_must_narrow_down():
    with pytest.raises(ValueError, match="candidate_k >= rerank_k >= context_k"):
        RetrievalSettings(candidate_k=10, rerank_k=20)


def test_pipeline_with_a_rerank_stage(small_env):
    with FakeReranker() as server:
        env = small_env | {"RAG_RETRIEVERS": "dense,rrf+rerank", "RAG_RERANK_URL": server.url}
        result = dg.materialize(
            assets, resources=resources_from_env(env), instance=dg.DagsterInstance.ephemeral()
        )
        assert result.success
    summary = pd.read_parquet(f"{small_env['RAG_DATA_DIR']}/reports/evaluation_summary.parquet")
    assert {"rrf+rerank", "dense", "bm25"} <= set(summary["retriever"])
    assert summary["context_recall"].between(0, 1).all()
