"""Inputs that would hang a run or flood it are bounded, and said in one line at once: RAG_SHARDS past
what one run holds or past the notes, a chat server's reply longer than RAG_MAX_REPLY, a question
`ask` would send longer than RAG_ASK_MAX_CHARS (the counts' bounds: test_trust.py)."""

import pytest

from rag_pipeline.definitions import build_definitions
from rag_pipeline.defs.resources import AnswerResource
from rag_pipeline.lib.answers import LLMError, Unit, make_prompt
from rag_pipeline.settings import Settings, SettingsError
from rag_pipeline_tests.fakes.llm import MODEL, FakeLLM
from rag_pipeline_tests.support.runs import asked, cli

PROMPT = make_prompt("1", "question?", [Unit("c1", "n", 0, 7, "passage")])


def test_an_answer_longer_than_the_limit_is_one_error_naming_the_variable_and_not_asked_again():
    with FakeLLM() as server:
        server.answer = lambda prompt: "word " * 20_000  # 100 KB
        env = {"RAG_LLM": "openai", "RAG_LLM_URL": server.url, "RAG_LLM_MODEL": MODEL}
        llm = AnswerResource.from_settings(Settings.from_env(env)).get()  # as the pipeline and `ask` make it
        with pytest.raises(LLMError) as error:
            llm.answer(PROMPT)
    assert str(error.value) == (
        f"openai model '{MODEL}' {server.url}/v1/chat/completions: the reply is longer than 65,536 bytes "
        "(RAG_MAX_REPLY); the rest was not read"
    )
    assert len(server.requests) == 1


def test_more_shards_than_a_run_holds_or_than_there_are_notes_are_refused_at_once(small_env, tmp_path):
    with pytest.raises(SettingsError) as error:
        build_definitions(Settings.from_env(small_env | {"RAG_SHARDS": "14"}))
    assert str(error.value) == (
        "RAG_SHARDS=14: 6 strategies in 14 shards make 552 assets and checks, more than the 500 one "
        "Dagster run's automation plans; set RAG_SHARDS to 12 or fewer"
    )
    build_definitions(Settings.from_env(small_env | {"RAG_SHARDS": "12"}))  # what it says holds
    for shards, said in [
        ("1000", "error: RAG_SHARDS='1000' is not valid: expected an integer from 1 to 64: "),
        ("4", "error: RAG_SHARDS=4 is more than the 3 notes at "),  # the small repository's
    ]:
        done = cli("rag_pipeline.run", ["--plan"], small_env | {"RAG_SHARDS": shards}, tmp_path)
        assert done.returncode == 2 and done.stderr.startswith(said), done.stdout + done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout


def test_ask_refuses_a_question_longer_than_the_limit_before_sending_it(monkeypatch, capsys, small_env):
    for limit, question in [("", "x" * 2001), ("10", "a question of 26 characters")]:
        code, out, err = asked(monkeypatch, capsys, small_env | {"RAG_ASK_MAX_CHARS": limit}, question)
        assert code == 2 and not out
        assert err == (
            f"error: the question is {len(question):,} characters long, more than "
            f"RAG_ASK_MAX_CHARS={int(limit or 2000):,}; shorten it, or raise RAG_ASK_MAX_CHARS\n"
        )
