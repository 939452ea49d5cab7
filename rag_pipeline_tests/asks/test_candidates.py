"""Flagged records as candidate questions, and how a questions file holds a candidate before and after
a person gives its evidence."""

import pytest

from rag_pipeline.lib.asks import Redactor, candidates
from rag_pipeline.lib.questions import QuestionsError, parse_questions
from rag_pipeline.lib.questions.fields import awaiting_evidence

FLAG = {"reason": "wrong: call 090-1234-5678", "time": "2026-01-02T03:04:05+00:00"}


def record(rid: str, groups: list[str], flagged: bool = True) -> dict:
    return {
        "id": rid,
        "question": "TCP の 3 つ目は? mail me at ops.lead@example.com",
        "groups": groups,
        "configuration": "fixed-1000/dense",
        "commit": "1234d14a554d87ed",
        "passages": [
            {"chunk_id": "a", "note": "deadlock", "heading_path": "Deadlock"},
            {"chunk_id": "b", "note": "tcp-handshake", "heading_path": "TCP handshake > Why three messages"},
        ],
        "citations": [2],
        "flag": FLAG if flagged else None,
    }


def test_a_flagged_record_becomes_a_candidate_without_personal_data():
    redact = Redactor()
    made, known = candidates([record("r1", ["sre"]), record("r2", [], flagged=False)], redact)
    assert known == 0 and len(made) == 1
    (item,) = made
    assert item["id"] == "ask-r1" and item["x-ask"] == "r1" and item["source"] == "asked"
    assert item["groups"] == ["sre"] and "slug" not in item and "evidence" not in item
    assert item["q"] == "TCP の 3 つ目は? mail me at [email]" and item["x-reason"] == "wrong: call [phone]"
    assert item["x-served"] == "fixed-1000/dense at commit 1234d14a554d"
    # the cited passage first, with the section it lies in
    assert item["x-hints"] == [
        {"slug": "tcp-handshake", "section": "Why three messages", "chunk_id": "b", "cited": True},
        {"slug": "deadlock", "section": None, "chunk_id": "a", "cited": False},
    ]
    assert redact.summary() == "personal data removed: 2 (1 e-mail address, 1 phone number)"


def test_a_record_already_in_the_questions_file_is_not_drafted_again():
    made, known = candidates([record("r1", []), record("r2", [])], Redactor(), [{"id": 7, "x-ask": "r1"}])
    assert [m["x-ask"] for m in made] == ["r2"] and known == 1


def test_a_candidate_waits_for_its_evidence_then_counts_as_hand_labelled():
    (waiting,), _ = candidates([record("r1", [])], Redactor())
    answered = {"id": 1, "q": "WAL?", "slug": "wal", "evidence": "追記"}
    assert awaiting_evidence(waiting) and not awaiting_evidence(answered)
    assert [q.id for q in parse_questions([answered, waiting], "q.json")] == [1]  # not scored yet
    given = waiting | {"slug": "tcp-handshake", "section": "Why three messages", "evidence": "three"}
    found = parse_questions([answered, given], "q.json")[1]
    assert found.groups == () and found.source == "hand" and found.answerable  # public only: groups []
    unanswerable = parse_questions([waiting | {"slug": None}], "q.json")[0]
    assert not unanswerable.answerable and unanswerable.category == "unanswerable"
    with pytest.raises(QuestionsError, match="question 1: field 'source' must be one of"):
        parse_questions([answered | {"source": "user"}], "q.json")
