"""The release stage's plain calls, without Dagster: a decision recorded, and the state a release
records in `current.json`."""

import pandas as pd

from rag_pipeline.lib.release import (
    REJECTED,
    RELEASED,
    Decision,
    Gate,
    read_history,
    release_decision,
    release_state,
    unevaluated,
)
from rag_pipeline.lib.serving import RELEASE_DIR
from rag_pipeline_tests.release.test_gate import outcomes, questions

REPORT = pd.DataFrame({"commit": ["c2"], "embedding_version": ["e1"], "strategy": ["s"]})


def test_a_rejected_run_is_recorded_in_the_history_only(tmp_path):
    ran = outcomes({q: 1 for q in range(1, 21)}).assign(retriever="dense")
    other = outcomes({q: None for q in range(1, 21)}).assign(retriever="bm25")  # not the release run's
    candidate = {
        "questions": questions(),
        "outcomes": pd.concat([ran, other], ignore_index=True),
        "answers": pd.DataFrame(columns=["question_id", "strategy", "retriever", "abstained"]),
        "judged": None,
        "report": REPORT,
        "notes": pd.DataFrame({"note": ["note-1"], "access": [[]]}),
    }
    problems = ["served table s: recall below 0.8"]
    done = release_decision(
        tmp_path, ("s", "dense"), Gate(5, 0.05, 0.05), candidate, problems, {"s": 3}, None
    )
    assert done.decision.decision == REJECTED and done.decision.recall == 1.0  # dense's ranks, not bm25's
    assert done.live is None and done.moved == [] and not (tmp_path / RELEASE_DIR / "current.json").exists()
    history = read_history(tmp_path / RELEASE_DIR)
    assert history[["decision", "commit", "run"]].values.tolist() == [[REJECTED, "c2", "s/dense"]]
    assert done.row["reasons"] == problems and done.files == [tmp_path / RELEASE_DIR / "history.parquet"]
    figures = done.figures(5, 0.25)
    assert figures["reasons"] == f"- {problems[0]}" and figures["live_commit"] == ""
    assert figures["recall@5"] == 1.0 and figures["answer_cost_per_1k"] == 0.25


def test_the_same_release_again_keeps_the_commit_live_before_it():
    decision = Decision(RELEASED, recall=0.9)
    asked = questions().assign(questions_sha256="q1")
    first = release_state(decision, "s/dense", 5, REPORT, asked, {"s": 3}, None, "t1")
    assert (first["commit"], first["previous_commit"], first["table_versions"]) == ("c2", None, {"s": 3})
    after = {**first, "commit": "c1", "previous_commit": "c0"}
    assert (
        release_state(decision, "s/dense", 5, REPORT, asked, {"s": 3}, after, "t2")["previous_commit"] == "c1"
    )
    same = {**first, "previous_commit": "c1"}  # c2 released at these versions, then the run died
    assert (
        release_state(decision, "s/dense", 5, REPORT, asked, {"s": 3}, same, "t2")["previous_commit"] == "c1"
    )
    assert (
        release_state(decision, "s/dense", 5, REPORT, asked, {"s": 4}, same, "t2")["previous_commit"] == "c2"
    )


def test_a_release_run_not_evaluated_is_a_problem():
    assert unevaluated(("s", "dense"), ["bm25", "dense"]) == []
    assert unevaluated(("s", "hybrid"), ["dense", "bm25"]) == [
        "the release run s/hybrid was not evaluated (retrievers of s: bm25, dense)"
    ]
