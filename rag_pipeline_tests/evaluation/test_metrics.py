from collections.abc import Hashable, Sequence

import pandas as pd
import pytest

from rag_pipeline.lib.evaluation import holds, question_outcomes, recall_at_k, summarize
from rag_pipeline.lib.questions import Evidence, Question


def first_ranks(gold: set[Hashable], ranked: Sequence[Hashable]) -> list[int | None]:
    """For each gold item (sorted), the 1-based rank where `ranked` first lists it."""
    pos = {}
    for r, item in enumerate(ranked, 1):
        pos.setdefault(item, r)
    return [pos.get(g) for g in sorted(gold, key=str)]


def test_the_worked_example_of_macro_hit_and_micro_recall():
    cases = [
        ({"A", "B"}, ["A", "X", "Y", "Z", "W"]),
        ({"C"}, ["C", "X", "Y", "Z", "W"]),
        ({"D", "E", "F"}, ["D", "X", "Y", "Z", "W"]),
    ]
    r = recall_at_k([first_ranks(gold, found) for gold, found in cases], 5)
    assert r["macro"] == pytest.approx(11 / 18)
    assert r["hit"] == 1.0
    assert r["micro"] == 0.5


def test_questions_without_gold_are_left_out():
    assert recall_at_k([[1], [], [None]], 1) == {"macro": 0.5, "hit": 0.5, "micro": 0.5}


def test_holds_needs_half_the_evidence_in_the_same_note():
    span = ("n", 100, 120)
    assert holds("n", 90, 110, span)  # exactly half
    assert not holds("n", 90, 109, span)
    assert not holds("m", 0, 1000, span)


def test_outcomes_and_summary():
    chunks = pd.DataFrame(
        {
            "chunk_id": ["a", "b", "c", "d"],
            "note": ["n1", "n1", "n2", "n2"],
            "start": [0, 100, 0, 100],
            "end": [100, 200, 100, 200],
            "n_chars": [100, 100, 100, 100],
        }
    )
    questions = [
        Question(1, "q1", "paraphrase", (Evidence("n1", None, "x"),)),
        Question(2, "q2", "multi-section", (Evidence("n2", None, "y"), Evidence("n2", None, "z"))),
        Question(3, "q3", "unanswerable", ()),
    ]
    spans = {"1": [("n1", 150, 170)], "2": [("n2", 10, 30), ("n2", 190, 230)], "3": []}
    retrieval = pd.DataFrame(
        {
            "question_id": ["1"] * 3 + ["2"] * 3 + ["3"] * 3,
            "rank": [1, 2, 3] * 3,
            "chunk_id": ["c", "a", "b", "c", "a", "b", "a", "b", "c"],
        }
    )
    out = question_outcomes(questions, spans, retrieval.merge(chunks, on="chunk_id"))
    assert out["note_rank"].tolist()[:2] == [2, 1]
    assert out["first_evidence_rank"].tolist()[:2] == [3, 1]
    assert list(out.loc[1, "evidence_ranks"]) == [1, None]  # 190-230 is only 10/40 inside "d"
    assert out.loc[0, "chars_at"][:4] == [100, 200, 300, 300]
    s = summarize(out).set_index("k")
    assert s.at[1, "note_recall"] == 0.5 and s.at[2, "note_recall"] == 1.0
    assert s.at[1, "evidence_recall"] == 0.5 and s.at[3, "evidence_recall"] == 1.0
    assert s.at[3, "evidence_macro_recall"] == pytest.approx((1 + 0.5) / 2)
    assert s.at[3, "evidence_micro_recall"] == pytest.approx(2 / 3)
    assert s.at[3, "mrr"] == pytest.approx((1 / 3 + 1) / 2)
    assert s.at[1, "n_questions"] == 2 and s.at[1, "n_unanswerable"] == 1
