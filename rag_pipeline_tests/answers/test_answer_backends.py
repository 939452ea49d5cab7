"""Chat backends and the answer cache against a local protocol server (rag_pipeline_tests/fakes/llm.py)."""

import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rag_pipeline.lib.answers import (
    PROMPT_VERSION,
    AnswerCache,
    LLMError,
    OllamaLLM,
    OpenAILLM,
    Sampling,
    Unit,
    answer_all,
    make_llm,
    make_prompt,
    split_thinking,
)
from rag_pipeline_tests.fakes.llm import DIGEST, MODEL, FakeLLM

FAST = {"timeout": 5.0, "max_retries": 2, "backoff": 0.01}


@pytest.fixture
def server():
    with FakeLLM() as s:
        yield s


def prompts(n: int, text: str = "passage"):
    return [
        make_prompt(str(i), f"question {i}?", [Unit(f"c{i}", "n", 0, 7, f"{text} {i}")]) for i in range(n)
    ]


def test_cache_second_run_asks_nothing_and_a_changed_chunk_asks_again(server, tmp_path: Path):
    llm = OpenAILLM(server.url, MODEL, concurrency=2, **FAST)
    replies, asked = answer_all(llm, prompts(5), tmp_path)
    assert asked == 5 and len(server.requests) == 5
    assert [r.text for r in replies] == ["The answer is 42 [1]."] * 5
    assert all(r.latency_s > 0 and r.prompt_tokens for r in replies)
    again, asked = answer_all(OpenAILLM(server.url, MODEL, **FAST), prompts(5), tmp_path)
    assert asked == 0 and len(server.requests) == 5  # nothing reached the server
    assert again == replies  # latency included: it is the first asking's
    changed = prompts(5)
    changed[3] = make_prompt("3", "question 3?", [Unit("c3", "n", 0, 7, "an edited passage")])
    _, asked = answer_all(llm, changed, tmp_path)
    assert asked == 1 and len(server.requests) == 6
    # another model, temperature or prompt version is another llm_version: nothing is shared
    _, asked = answer_all(
        OpenAILLM(server.url, MODEL, sampling=Sampling(temperature=0.7), **FAST), prompts(1), tmp_path
    )
    assert asked == 1


def test_a_failure_keeps_what_was_answered(server, tmp_path: Path):
    llm = OpenAILLM(server.url, MODEL, **FAST)
    server.faults = ["", "", "400"]
    with pytest.raises(LLMError, match=r"question 2: .*HTTP 400"):
        answer_all(llm, prompts(5), tmp_path, flush_every=100)
    assert len(AnswerCache(tmp_path, llm.llm_version)) == 2
    _, asked = answer_all(llm, prompts(5), tmp_path)
    assert asked == 3


def test_requests_carry_the_settings_and_the_key_stays_out_of_every_output(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", "sk-secret-123")
    llm = make_llm(
        "openai", url=server.url, model=MODEL, api_key_env="MY_LLM_KEY", sampling=Sampling(seed=7), **FAST
    )
    answer_all(llm, prompts(1), tmp_path)
    body = server.requests[0]
    assert body["temperature"] == 0.0 and body["seed"] == 7 and body["stream"] is False
    assert server.headers[0]["Authorization"] == "Bearer sk-secret-123"
    assert "secret" not in llm.llm_version and "secret" not in repr(vars(llm))
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"secret" not in stored
    ollama = OllamaLLM(server.url, MODEL, sampling=Sampling(seed=3), **FAST)
    ollama.answer(prompts(1)[0])
    body = server.requests[-1]
    assert body["options"] == {"temperature": 0.0, "seed": 3, "num_ctx": 8192} and body["stream"] is False
    assert "think" not in body  # not sent unless asked for


def test_ollama_names_its_digest_and_a_missing_model(server):
    llm = OllamaLLM(server.url, MODEL, **FAST)
    assert llm.llm_version.startswith(f"ollama:{MODEL}@{DIGEST}|") and PROMPT_VERSION in llm.llm_version
    with pytest.raises(LLMError, match="'nope' not found; run `ollama pull nope`"):
        OllamaLLM(server.url, "nope", **FAST)


def test_thinking_is_kept_apart_from_the_answer(server):
    server.thinking = "The passage says 77 MB."
    server.answer = lambda prompt: "77 MB [1]"
    reply = OllamaLLM(server.url, MODEL, think=True, **FAST).answer(prompts(1)[0])
    assert server.requests[-1]["think"] is True
    assert (reply.text, reply.thinking) == ("77 MB [1]", "The passage says 77 MB.")
    server.answer = lambda prompt: "<think>\nMaybe [2]?\n</think>\n\n77 MB [1]"
    for llm in (OllamaLLM(server.url, MODEL, **FAST), OpenAILLM(server.url, MODEL, **FAST)):
        reply = llm.answer(prompts(1)[0])
        assert (reply.text, reply.thinking) == ("77 MB [1]", "Maybe [2]?")


def test_split_thinking_edge_cases():
    assert split_thinking("opened by the template</think>answer") == ("answer", "opened by the template")
    assert split_thinking("answer <think>cut off") == ("answer", "cut off")
    assert split_thinking("plain") == ("plain", "")


def test_a_timeout_names_url_and_model_within_bounded_time(server):
    server.faults = ["slow", "slow"]
    server.slow_seconds = 1.0
    llm = OpenAILLM(server.url, MODEL, timeout=0.2, max_retries=1, backoff=0.01)
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        llm.answer(prompts(1)[0])
    assert time.monotonic() - started < 1.5
    message = str(info.value)
    assert f"{server.url}/v1/chat/completions" in message and MODEL in message and "timed out" in message


def test_5xx_is_retried_and_a_persistent_one_fails_with_its_status(server):
    llm = OllamaLLM(server.url, MODEL, **FAST)
    server.faults = ["500"]
    assert llm.answer(prompts(1)[0]).text == "The answer is 42 [1]."
    assert len(server.requests) == 2
    server.faults = ["503"] * 3
    with pytest.raises(LLMError, match="HTTP 503: model runner crashed, after 3 attempts") as info:
        llm.answer(prompts(1)[0])
    assert info.value.status == 503


def test_answers_are_stored_as_atomic_parquet_segments(server, tmp_path: Path):
    llm = OpenAILLM(server.url, MODEL, **FAST)
    answer_all(llm, prompts(3), tmp_path, flush_every=1)
    cache = AnswerCache(tmp_path, llm.llm_version)
    segments = sorted(cache.dir.glob("segment-*.parquet"))
    assert len(segments) == 3 and not list(cache.dir.glob(".*tmp"))
    assert pq.read_table(segments[0]).column_names[:3] == ["text_hash", "text", "thinking"]
    cache.FANOUT = 3
    cache.compact()
    assert len(cache.live()) == 1
    assert len(AnswerCache(tmp_path, llm.llm_version)) == 3
