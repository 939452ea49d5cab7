import json

import dagster as dg
import numpy as np
import pytest

from rag_pipeline.definitions import assets, resources_from_env
from rag_pipeline.lib.retrieval import (
    Queries,
    RetrievalSettings,
    merge_parents,
    parse_retriever,
    retrieve,
)
from rag_pipeline_tests.support.indexes import small_index


def test_retriever_names():
    spec = parse_retriever("rrf+ctx+parent")
    assert (spec.ranker, spec.contextual, spec.parent) == ("rrf", True, True)
    assert spec.inputs == ("dense+ctx", "bm25+ctx")
    assert parse_retriever("bm25").inputs == ("bm25",)
    for bad in ("sparse", "dense+ctx+ctx", "rrf+child"):
        with pytest.raises(ValueError, match="unknown retriever"):
            parse_retriever(bad)


def test_parents_are_merged_and_contained_ones_skipped():
    parent_of = np.array(["p1", "p1", "p2", "p3"])
    spans = [("n", 0, 100), ("n", 0, 100), ("n", 100, 300), ("n", 150, 300)]
    merged = merge_parents([(1, 0.9), (0, 0.8), (2, 0.7), (3, 0.6)], parent_of, spans)
    assert merged == [(1, 0.9), (2, 0.7)]  # p1 once, p3 lies inside p2


def test_retrieve_runs_each_configuration_and_the_fusion_inputs():
    frame = retrieve(
        small_index(),
        ["rrf+parent", "dense"],
        Queries(["q1"], np.array([[0, 1, 0]], np.float32), ["40P01 とは"]),
        RetrievalSettings(),
    )
    assert set(frame["retriever"]) == {"rrf+parent", "dense", "bm25"}
    bm25 = frame[frame["retriever"] == "bm25"]
    assert bm25["chunk_id"].tolist() == ["b"]  # only the chunk sharing a token
    parent = frame[frame["retriever"] == "rrf+parent"]
    assert parent["chunk_id"].tolist() == ["p1", "p2"]
    assert parent[["start", "end", "n_chars"]].values.tolist() == [[0, 100, 100], [0, 40, 40]]


def test_lexical_check_fails_when_questions_share_no_token(notes_repo, tmp_path):
    questions = [
        {
            "id": i,
            "q": q,
            "slug": "deadlock",
            "section": "再試行の設計",
            "evidence": "最大 3 回まで再試行します",
        }
        for i, q in enumerate(["교착 상태는 무엇인가", "재시도는 몇 번", "데이터베이스 잠금"], 1)
    ]
    path = tmp_path / "korean.json"
    path.write_text(json.dumps(questions, ensure_ascii=False))
    env = {
        "RAG_NOTES_REPO": notes_repo.working_tree_dir,
        "RAG_QUESTIONS": str(path),
        "RAG_DATA_DIR": str(tmp_path / "out"),
        "RAG_EMBEDDER": "hashing",
        "RAG_RETRIEVERS": "dense,bm25",
    }
    result = dg.materialize(
        assets, resources=resources_from_env(env), instance=dg.DagsterInstance.ephemeral()
    )
    lexical = [c for c in result.get_asset_check_evaluations() if c.check_name == "lexical_matches"]
    assert len(lexical) == 6 and not any(c.passed for c in lexical)
    assert all(c.metadata["lexical_miss_share"].value == 1.0 for c in lexical)
