"""The stale gold questions as make run and the UI summary list them, with their suggestions."""

import pandas as pd

from rag_pipeline.lib.questions import stale_suggestions


def drift(rows: list[dict]) -> pd.DataFrame:
    base = {"slug": "wal", "evidence": "書き込みは 1.2 秒", "suggestion_score": float("nan")}
    return pd.DataFrame([base | row for row in rows])


def test_each_stale_question_is_listed_with_its_suggestion_or_none():
    lines = stale_suggestions(
        drift(
            [
                {
                    "question_id": "7",
                    "gold_status": "stale",
                    "suggested_evidence": "書き込みは 1.5 秒",
                    "suggestion_score": 0.81,
                },
                {"question_id": "8", "gold_status": "stale", "suggested_evidence": None},
                {"question_id": "9", "gold_status": "carried", "suggested_evidence": None},
            ]
        )
    )
    assert lines[0] == "2 question(s) with stale gold labels (not scored):"
    assert "question 7 (wal): '書き込みは 1.2 秒' -> suggested '書き込みは 1.5 秒' (score 0.81)" in lines[1]
    assert lines[2].endswith("-> no suggestion") and "question 8" in lines[2]
    assert "gold refresh" in lines[-1] and not any("question 9" in line for line in lines)


def test_no_stale_question_gives_no_lines():
    assert (
        stale_suggestions(drift([{"question_id": "1", "gold_status": "ok", "suggested_evidence": None}]))
        == []
    )
