"""Every question is dev or test: its own `split` field, else drawn by its id within its stratum
(category and answerability), so each stratum has the test share, editing a question moves none,
adding or removing one moves at most one other of its stratum, and a larger share only adds test
questions."""

import json

import pytest

from rag_pipeline.lib.questions import QuestionsError, parse_questions, questions_frame
from rag_pipeline.settings import BUNDLED_QUESTIONS


def frame(items: list[dict], share: float = 0.3):
    return questions_frame(parse_questions(items, "questions.json"), {}, test_share=share)


def splits(items: list[dict], share: float = 0.3) -> dict[str, str]:
    found = frame(items, share)
    return dict(zip(found["question_id"], found["split"]))


def test_the_bundled_questions_are_stratified_and_follow_their_field_and_nothing_else_moves():
    items = json.loads(BUNDLED_QUESTIONS.read_text(encoding="utf-8"))
    found = frame(items)
    by_stratum = found.groupby(["category", "answerable"])["split"].apply(lambda s: (s == "test").mean())
    # each stratum less than one question off 0.3 of its size (an unstratified draw: 0.27 to 0.41)
    sizes = found.groupby(["category", "answerable"]).size()
    assert ((by_stratum - 0.3).abs() < 1 / sizes).all(), by_stratum
    before = dict(zip(found["question_id"], found["split"]))
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
    # the marked left their strata: each moves at most one other across its stratum's boundary
    moved = [q for q, s in after.items() if q not in marked and before[q] != s]
    assert len(moved) <= 6 and edited not in moved


def test_adding_and_removing_questions_moves_at_most_one_other_and_a_larger_share_only_adds_test():
    items = [{"id": i, "q": f"question {i}?", "slug": None} for i in range(1, 200)]
    before = splits(items)
    for changed in ([*items, {"id": "new-1", "q": "new?", "slug": None}], items[1:]):
        after = splits(changed)
        assert sum(before[q] != s for q, s in after.items() if q in before) <= 1
    larger = splits(items, 0.5)
    assert {q for q, s in before.items() if s == "test"} < {q for q, s in larger.items() if s == "test"}
    assert splits([{"id": 7, "q": "q?", "slug": None}]) == splits([{"id": "7", "q": "q?", "slug": None}])


def test_strata_too_small_for_a_whole_test_question_still_have_some():
    """40 categories of two questions each: 0.3 x 2 rounds to 0, yet about 30% are test."""
    items = [{"id": i, "q": f"question {i}?", "slug": None, "category": f"c{i // 2}"} for i in range(80)]
    share = sum(s == "test" for s in splits(items).values()) / 80
    assert 0.2 <= share <= 0.4, share


def test_a_bad_split_names_the_question_and_the_field():
    with pytest.raises(
        QuestionsError,
        match=r"questions.json: question 4: field 'split' must be \"dev\" or \"test\", got 'train'",
    ):
        parse_questions([{"id": 4, "q": "q?", "slug": None, "split": "train"}], "questions.json")
