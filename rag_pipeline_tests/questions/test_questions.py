import json

import pytest

from rag_pipeline.lib.questions import (
    QuestionsError,
    check_notes_exist,
    evidence_problems,
    invalid_gold_message,
    load_questions,
    questions_frame,
    questions_from_frame,
)


def write(tmp_path, payload) -> str:
    path = tmp_path / "q.json"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False))
    return str(path)


def test_loads_seed_format_with_second_evidence_and_unanswerable(questions_path):
    qs = load_questions(questions_path)
    assert len(qs) == 5
    assert [len(q.evidence) for q in qs] == [1, 1, 1, 2, 0]
    assert not qs[4].answerable and qs[4].category == "unanswerable"


def test_bad_json_names_the_file_and_position(tmp_path):
    path = write(tmp_path, '[{"id": 1, "q": "x",}]')
    with pytest.raises(QuestionsError, match=r"q\.json: invalid JSON at line 1 column"):
        load_questions(path)


def test_missing_field_names_the_question_and_field(tmp_path):
    path = write(tmp_path, [{"id": 9, "q": "x", "slug": "deadlock", "section": "s"}])
    with pytest.raises(QuestionsError, match="question 9: missing field 'evidence'"):
        load_questions(path)
    path = write(tmp_path, [{"q": "x"}])
    with pytest.raises(QuestionsError, match="item #0: missing field 'id'"):
        load_questions(path)


def test_duplicate_id_and_wrong_shape(tmp_path):
    with pytest.raises(QuestionsError, match="question 1: duplicate id"):
        load_questions(
            write(tmp_path, [{"id": 1, "q": "a", "slug": None}, {"id": 1, "q": "b", "slug": None}])
        )
    with pytest.raises(QuestionsError, match="expected a JSON list"):
        load_questions(write(tmp_path, {"id": 1}))


def test_unknown_slug_names_it(questions_path):
    qs = load_questions(questions_path)
    with pytest.raises(QuestionsError, match="question 1: unknown note slug 'deadlock'"):
        check_notes_exist(qs, {"columnar-storage", "tcp-handshake"}, "q.json")


def test_evidence_problems_and_frame_round_trip(questions_path):
    qs = load_questions(questions_path)
    texts = {
        "deadlock": "SQLSTATE 40P01 が返ります。最大 3 回まで再試行します。最大 3 回まで再試行します。",
        "columnar-storage": "nothing here",
        "tcp-handshake": "Each side must learn that the other received its initial sequence number.",
    }
    problems = evidence_problems(qs, texts)
    assert problems == {
        "2": "evidence 'Parquet は 15.6 分の 1 の大きさでした' absent from note 'columnar-storage'",
        "4": "evidence '最大 3 回まで再試行します' found 2 times in note 'deadlock'; "
        "evidence 'キューに移して後で処理します' absent from note 'deadlock'",
    }
    message = invalid_gold_message("q.json", problems)
    assert (
        message.startswith("q.json: 2 question(s) with bad gold labels: question 2 (")
        and "question 4 (" in message
    )
    back, spans = questions_from_frame(questions_frame(qs, texts))
    assert [q.q for q in back] == [q.q for q in qs]
    assert spans["1"] == [("deadlock", 0, len("SQLSTATE 40P01 が返ります"))]
    assert spans["2"] == [None] and spans["5"] == []
