"""A question field the parser does not know is an error naming the question and the field, with the
field meant when one is near: a misspelt `critical` or `groups` would drop a flag or open every note.
Fields of one's own start with `x-`."""

import json

import pandas as pd
import pytest

from rag_pipeline.lib.questions import QuestionsError, load_questions, refresh
from rag_pipeline_tests.support.repos import QUESTIONS


def load(tmp_path, *items: dict):
    path = tmp_path / "q.json"
    path.write_text(json.dumps(list(items), ensure_ascii=False), encoding="utf-8")
    return load_questions(path)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"critcal": True},
            "question 1: unknown field 'critcal'; did you mean 'critical'? (fields of your own start with 'x-')",
        ),
        (
            {"group": ["sre"]},
            "question 1: unknown field 'group'; did you mean 'groups'? (fields of your own start with 'x-')",
        ),
        (
            {"Groups": ["sre"]},
            "question 1: unknown field 'Groups'; did you mean 'groups'? (fields of your own start with 'x-')",
        ),
        (
            {"evidense": "x"},
            "question 1: unknown field 'evidense'; did you mean 'evidence'? (fields of your own start with 'x-')",
        ),
        ({"x_note": "x"}, "question 1: unknown field 'x_note'; fields of your own start with 'x-'"),
        ({"asker": "sre"}, "question 1: unknown field 'asker'; fields of your own start with 'x-'"),
    ],
)
def test_an_unknown_field_names_the_question_and_the_field(tmp_path, extra, message):
    with pytest.raises(QuestionsError) as error:
        load(tmp_path, QUESTIONS[1], QUESTIONS[0] | extra)
    assert str(error.value) == f"{tmp_path / 'q.json'}: {message}"


def test_an_unknown_field_of_an_item_without_id_names_the_item(tmp_path):
    with pytest.raises(QuestionsError, match=r"q\.json: item #0: unknown field 'ID'; did you mean 'id'\?"):
        load(tmp_path, {"ID": 1, "q": "x"})


def test_own_and_generated_fields_are_allowed(tmp_path):
    extra = {"x-owner": "me", "x-notes": {"any": [1]}, "generated": True, "generator": "llm-v1"}
    (question,) = load(tmp_path, QUESTIONS[0] | extra | {"critical": True, "groups": None})
    assert question.critical and question.id == 1


def test_a_refreshed_file_loads_again(tmp_path):
    """`gold refresh` writes `relabelled`: a known field."""
    drift = pd.DataFrame(
        [
            {
                "question_id": "1",
                "gold_status": "stale",
                "evidence_status": "stale",
                "field": "evidence",
                "slug": "deadlock",
                "evidence": QUESTIONS[0]["evidence"],
                "suggested_evidence": "SQLSTATE 40P01",
                "suggested_section": None,
                "suggestion_score": 0.9,
                "changed_in": ["c2"],
            }
        ]
    )
    items, _ = refresh([QUESTIONS[0]], drift, "c" * 40)
    assert items[0]["relabelled"] is True
    assert load(tmp_path, *items)[0].evidence[0].text == "SQLSTATE 40P01"
