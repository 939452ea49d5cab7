"""The judging stage's one call (`judge_answers`), without Dagster: answers judged by the rules,
people's labels attached, the summary and the pages that show it."""

import pandas as pd
import pytest

from rag_pipeline.lib.answers import BASELINE_STRATEGY, Unit
from rag_pipeline.lib.judging import RulesJudge, judge_answers, judged_runs, read_labels
from rag_pipeline.lib.questions import Evidence, Question

QUESTION = Question(
    "1",
    "デッドロックを検出した PostgreSQL はどんなエラーコードを返す?",
    "identifier",
    (Evidence("deadlock", None, "SQLSTATE 40P01 が返ります"),),
    split="dev",
)
UNIT = Unit("c1", "deadlock", 0, 40, "デッドロックを検出すると SQLSTATE 40P01 が返ります。")
NOTES = pd.DataFrame({"note": ["deadlock"], "access": [[]]})


def answers(*rows: tuple[str, str, str, list[str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "question_id": "1",
                "strategy": strategy,
                "retriever": retriever,
                "llm_version": "llm",
                "repeat": 0,
                "answer": answer,
                "cited": cited,
                "abstained": False,
                "citation_valid": True,
            }
            for strategy, retriever, answer, cited in rows
        ]
    )


def test_the_rules_judge_every_answer_and_the_summary_shows_the_served_run():
    frame = answers(
        ("section", "dense", "SQLSTATE 40P01 が返ります [1]。", ["c1"]),
        ("section", "bm25", "SQLSTATE 99999 が返ります [1]。", ["c1"]),
        (BASELINE_STRATEGY, "none", "SQLSTATE 40P01 です。", []),
    )
    assert judged_runs(frame) == [("section", "bm25"), ("section", "dense")]  # not the baselines
    units = {
        ("section", "dense"): {"1": [UNIT]},
        ("section", "bm25"): {"1": [UNIT]},
        (BASELINE_STRATEGY, "none"): {"1": []},
    }
    done = judge_answers(RulesJudge(), 1, 0, frame, units, [QUESTION], NOTES, read_labels(None))
    faithful = done.rows[done.rows["criterion"] == "faithful"].set_index("retriever")["verdict"]
    assert faithful["dense"] != faithful["bm25"]  # 99999 is in no passage
    assert done.asked == 0 and done.counts.used == 0 and len(done.items) == 3
    assert done.figures(RulesJudge().judge_version)["figures"] == "the judge's, uncorrected"
    pages = done.pages("section/dense")
    assert set(pages) == {"judged section/dense", "judged_summary"}
    assert pages["judged section/dense"] != "not answered"
    assert done.pages("other/dense")["judged other/dense"] == "not answered"
    assert len(set(done.content_versions())) == 3


def test_an_answer_citing_a_unit_its_prompt_does_not_pass_is_refused():
    frame = answers(("section", "dense", "SQLSTATE 40P01 [1]。", ["gone"]))
    with pytest.raises(ValueError, match="older than the retrieval"):
        judge_answers(
            RulesJudge(),
            1,
            0,
            frame,
            {("section", "dense"): {"1": [UNIT]}},
            [QUESTION],
            NOTES,
            read_labels(None),
        )
