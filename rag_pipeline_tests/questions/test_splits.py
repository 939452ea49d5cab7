"""Every question is dev or test: its own `split` field, else a function of its id alone, so that editing,
adding or removing other questions moves none."""

import json

import pytest

from rag_pipeline.lib.questions import QuestionsError, hashed_split, parse_questions, questions_frame
from rag_pipeline.settings import BUNDLED_QUESTIONS


def splits(items: list[dict], share: float = 0.3) -> dict[str, str]:
    frame = questions_frame(parse_questions(items, "questions.json"), {}, test_share=share)
    return dict(zip(frame["question_id"], frame["split"]))


def test_the_bundled_questions_split_follow_their_field_and_nothing_else_moves():
    items = json.loads(BUNDLED_QUESTIONS.read_text(encoding="utf-8"))
    before = splits(items)
    share = sum(s == "test" for s in before.values()) / len(before)
    assert 0.2 <= share <= 0.4, share
    dev = [q for q, s in before.items() if s == "dev"]
    test = [q for q, s in before.items() if s == "test"]
    # three dev questions said to be test, three test ones said to be dev, another question edited
    marked = {q: "test" for q in dev[:3]} | {q: "dev" for q in test[:3]}
    edited = dev[3]
    for item in items:
        if str(item["id"]) in marked:
            item["split"] = marked[str(item["id"])]
        if str(item["id"]) == edited:
            item["q"] += " (言い換え)"
    after = splits(items)
    assert {q: after[q] for q in marked} == marked
    assert {q: s for q, s in after.items() if q not in marked} == {
        q: s for q, s in before.items() if q not in marked
    }


def test_adding_and_removing_questions_moves_no_other_and_a_larger_share_only_adds_test_questions():
    items = [{"id": i, "q": f"question {i}?", "slug": None} for i in range(1, 200)]
    before = splits(items)
    fewer = splits([*items[50:], {"id": "new-1", "q": "new?", "slug": None}])
    assert all(before[q] == s for q, s in fewer.items() if q in before)
    larger = splits(items, 0.5)
    assert {q for q, s in before.items() if s == "test"} < {q for q, s in larger.items() if s == "test"}
    assert hashed_split(7, 0.3) == hashed_split("7", 0.3)  # an id read back as text keeps its split


def test_a_bad_split_names_the_question_and_the_field():
    with pytest.raises(
        QuestionsError,
        match=r"questions.json: question 4: field 'split' must be \"dev\" or \"test\", got 'train'",
    ):
        parse_questions([{"id": 4, "q": "q?", "slug": None, "split": "train"}], "questions.json")
