"""Looks are counted by the test questions themselves: a look at a split counts for every later split
sharing a test question with it, so adding or editing a question keeps the count of those already
looked at; a test question that chose as a development question in an earlier look is said (library
level, hand-made ledgers)."""

import pandas as pd

from rag_pipeline.lib.evaluation import Split, looks_sentence, read_looks, record_look, reuse


def split(test: range, dev: range, sha: str = "a" * 64) -> Split:
    return Split(frozenset(f"{q}:d{q}" for q in test), frozenset(f"{q}:d{q}" for q in dev), sha)


def test_adding_a_question_keeps_the_count_and_a_moved_development_question_is_said(tmp_path):
    first = split(range(0, 30), range(30, 100))
    record_look(tmp_path, first, "e1", "evaluation_summary")
    # one question more (its questions file's sha256 is another): the 30 were looked at once already
    added = split(range(0, 31), range(31, 101), "b" * 64)
    record_look(tmp_path, added, "e2", "evaluation_summary")
    looks = read_looks(tmp_path)
    found = reuse(looks, added, "e2")
    assert (found.looks, found.n_test, found.fresh, found.moved) == (2, 31, 1, 1)  # 30 was dev in e1
    said = looks_sentence(found, 20)
    assert said.startswith("the test split (31 questions) has confirmed 2 choices")
    assert "1 of its questions chose as development questions in an earlier look" in said
    # RAG_TEST_SHARE raised: ten development questions that chose are test now
    raised = split(range(0, 40), range(40, 101), "b" * 64)
    assert reuse(looks, raised, "e3").moved == 10
    # an edited question is a new one: the others keep their count, it is fresh
    edited = Split(frozenset({*list(first.test)[1:], "0:edited"}), first.dev, "c" * 64)
    found = reuse(looks, edited, "e4")
    assert (found.looks, found.fresh) == (2, 1)
    assert "past RAG_TEST_LOOKS=1 it is over-used" in looks_sentence(found, 1)
    # questions never looked at: nothing counts
    assert reuse(looks, split(range(500, 510), range(510, 520)), "e5").looks == 0


def test_a_look_recorded_before_looks_named_their_questions_counts_by_its_questions_file(tmp_path):
    old = pd.DataFrame(
        [{"time": "2026-01-01T00:00:00+00:00", "questions_sha256": "a" * 64, "experiment": "e0", "by": "x"}]
    )
    old.to_parquet(tmp_path / "looks.parquet")
    assert reuse(read_looks(tmp_path), split(range(3), range(3, 9)), "e1").looks == 1
    assert reuse(read_looks(tmp_path), split(range(3), range(3, 9), "b" * 64), "e1").looks == 0
