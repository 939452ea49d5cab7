"""The serving evaluation's report without Dagster: the tables' measurements at one commit, what
they were computed from in the file's metadata, and the view a person reads."""

import json

import pandas as pd

from rag_pipeline.lib.serving.reported import serving_report


def measured(strategy: str, recall: float, p95: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "strategy": [strategy] * 2,
            "index_type": ["exact"] * 2,
            "k": [1, 5],
            "recall_vs_exact": [1.0, recall],
            "underfilled": [0.0, 0.0],
            "n_questions": [3, 3],
            "table_version": [2, 2],
            "latency_p50_ms": [1.4, 2.6],
            "latency_p95_ms": [3.0, p95],
            "embedding_version": ["e1"] * 2,
        }
    )


def test_the_report_names_what_it_was_computed_from():
    questions = pd.DataFrame({"question_id": ["1"], "questions_sha256": ["q1"]})
    code = {"chunkers": {"a": "v1"}, "serving": "abc"}
    report = serving_report(
        [measured("a", 0.9, 7.4), measured("b", 0.8, 9.6)], questions, "repo", "c1", "q.json", code
    )
    assert report.frame["commit"].unique().tolist() == ["c1"] and len(report.frame) == 4
    metadata = report.table().schema.metadata
    assert metadata[b"rag.questions_sha256"] == b"q1" and metadata[b"rag.embedding_version"] == b"e1"
    assert json.loads(metadata[b"rag.code_versions"]) == code
    assert report.figures() == {"min recall_vs_exact@5": 0.8, "max latency_p95_ms@5": 9.6}
    shown = report.shown()
    assert "commit" not in shown and shown["latency_p50_ms"].tolist() == [1, 3, 1, 3]
