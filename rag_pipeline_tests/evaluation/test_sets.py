"""Hand-written and generated questions scored apart: the rank agreement between the two sets, and a
run over a merged questions file whose report keeps them side by side."""

import json

import pandas as pd
import pytest

from rag_pipeline.cli.gold import main
from rag_pipeline.lib.core import read_frame
from rag_pipeline.lib.evaluation import decided_rows, rank_agreement
from rag_pipeline.lib.evaluation.metrics import HEADLINE
from rag_pipeline_tests.support.runs import run_all


def matrix(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"configuration": list(values), HEADLINE: list(values.values())})


def test_rank_agreement_counts_the_pairs_ordered_the_other_way():
    hand = matrix({"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.5})
    generated = matrix({"a": 0.9, "b": 0.6, "c": 0.7, "d": 0.5, "e": 0.5, "only-here": 0.1})
    got = rank_agreement(hand, generated)
    # b/c flip; d/e tie in the generated set, which is no flip; `only-here` is in one set only
    assert got["flips"] == [["b", "c"]] and got["configurations"] == 5
    assert got["kendall_tau"] == pytest.approx(0.7379, abs=1e-4)  # tau-b with one tie
    same = rank_agreement(hand, hand)
    assert same["flips"] == [] and same["kendall_tau"] == 1.0


def test_decided_rows_keep_the_hand_written_set_when_there_is_one():
    table = pd.DataFrame({"source": ["hand", "generated", "hand"], "x": [1, 2, 3]})
    assert decided_rows(table)["x"].tolist() == [1, 3]
    assert decided_rows(table[table["source"] == "generated"])["x"].tolist() == [2]
    assert decided_rows(table.drop(columns="source"))["x"].tolist() == [1, 2, 3]  # a report from before


@pytest.mark.slow
def test_a_merged_questions_file_is_reported_hand_and_generated_side_by_side(
    small_env, notes_repo, tmp_path, monkeypatch
):
    for name, value in small_env.items():
        monkeypatch.setenv(name, value)
    merged = tmp_path / "merged.json"
    assert main(["generate", "--commit", "HEAD", "--n", "10", "--merge", "--out", str(merged)]) == 0
    items = json.loads(merged.read_text(encoding="utf-8"))
    assert sum(bool(q.get("generated")) for q in items) == 10
    env = small_env | {"RAG_QUESTIONS": str(merged), "RAG_RETRIEVERS": "dense,bm25"}
    assert run_all(env).success
    reports = tmp_path / "out" / "reports"
    summary = read_frame(reports / "evaluation_summary.parquet")
    assert set(summary["source"]) == {"hand", "generated"}
    at5 = summary[summary["k"] == 5].groupby("source")["n_questions"].first()
    assert at5["generated"] == 10 and at5["hand"] == 4  # the small set: 4 answerable, 1 unanswerable
    for name in ("category_recall", "budget_recall", "question_ranks", "comparison"):
        assert set(read_frame(reports / f"{name}.parquet")["source"]) == {"hand", "generated"}
    verdict = json.loads((reports / "verdict.json").read_text())
    # the small set's 4 answerable questions make too few test questions to confirm anything: the
    # verdict compares on the development questions, and says so
    assert verdict["questions"] == "hand" and verdict["compared_on"] == "dev"
    assert "are too few to confirm anything" in verdict["wording"]
    assert verdict["wording"].endswith("decided on the hand-written questions.")
    assert verdict["agreement"]["sets"] == ["hand", "generated"]
    report = (reports / "report.md").read_text()
    assert "## Hand-written and generated questions" in report and "Kendall's tau" in report


@pytest.mark.slow
def test_the_verdict_is_decided_on_the_generated_set_when_no_hand_written_question_is_scored(
    small_env, questions_path, tmp_path, monkeypatch
):
    unanswerable = [q for q in json.loads(questions_path.read_text(encoding="utf-8")) if q["slug"] is None]
    questions_path.write_text(json.dumps(unanswerable, ensure_ascii=False), encoding="utf-8")
    for name, value in small_env.items():
        monkeypatch.setenv(name, value)
    assert main(["generate", "--commit", "HEAD", "--n", "8", "--merge"]) == 0
    merged = tmp_path / "questions.generated.json"
    assert run_all(small_env | {"RAG_QUESTIONS": str(merged), "RAG_RETRIEVERS": "dense"}).success
    reports = tmp_path / "out" / "reports"
    verdict = json.loads((reports / "verdict.json").read_text())
    assert verdict["questions"] == "generated" and "agreement" not in verdict
    assert verdict["wording"].endswith("; decided on the generated questions.")
    assert verdict["n_dev"] + verdict["n_test"] == 8 and verdict["compared_on"] == "dev"
    assert set(read_frame(reports / "evaluation_summary.parquet")["source"]) == {"generated"}
