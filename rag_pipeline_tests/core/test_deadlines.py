"""Deadlines that hold: every request of the embedders and the chat clients ends at its timeout,
against a server on 127.0.0.1 that hangs or answers one byte at a time, directly or through a proxy."""

import logging
import re
import threading
import time

import pytest

from rag_pipeline.lib.answers import LLMError, OllamaLLM, OpenAILLM, Unit, make_prompt
from rag_pipeline.lib.embedding import EmbeddingError, OllamaEmbedder, OpenAIEmbedder
from rag_pipeline.settings import Settings, SettingsError
from rag_pipeline_tests.fakes.json_server import JsonHandler, LocalServer, free_port
from rag_pipeline_tests.fakes.slow import SlowServer

# a byte every 0.3 s never trips a 1 s per-read timeout; only a deadline on the request does
TIMEOUT, RETRIES, BACKOFF = 1.0, 1, 0.01
CLIENT = {"timeout": TIMEOUT, "max_retries": RETRIES, "backoff": BACKOFF}
BOUND = (RETRIES + 1) * TIMEOUT + 1.0  # attempts x timeout, the backoff, and slack for a loaded machine
MODES = ["trickle_body", "trickle_head", "hang"]
FAILED = rf"timed out after {TIMEOUT:g} s \(\w+Timeout\), after {RETRIES + 1} attempts"


def timed(call) -> tuple[Exception, float]:
    started = time.monotonic()
    with pytest.raises((EmbeddingError, LLMError)) as info:
        call()
    return info.value, time.monotonic() - started


@pytest.mark.parametrize("mode", MODES)
def test_openai_embedder_fails_at_the_deadline(mode):
    with SlowServer(mode) as server:
        emb = OpenAIEmbedder(server.url, "e5-small", **CLIENT)
        error, elapsed = timed(lambda: emb.embed(["a text"], "passage"))
    assert RETRIES + 1 - 0.1 < elapsed < BOUND, elapsed
    assert f"openai (model 'e5-small') {server.url}/v1/embeddings: " in str(error)
    assert len(server.requests) == RETRIES + 1
    assert re.search(FAILED, str(error)), str(error)


@pytest.mark.parametrize("mode", MODES)
def test_ollama_embedder_fails_at_the_deadline(mode):
    with SlowServer(mode) as server:
        emb = OllamaEmbedder(server.url, "bge-m3", **CLIENT)
        error, elapsed = timed(lambda: emb.embed(["a text"], "passage"))  # asks /api/show first
    assert elapsed < BOUND, elapsed
    assert f"ollama (model 'bge-m3') {server.url}/api/show: " in str(error)
    assert re.search(FAILED, str(error)), str(error)


@pytest.mark.parametrize("mode", MODES)
def test_openai_chat_fails_at_the_deadline(mode):
    prompt = make_prompt("1", "question?", [Unit("c1", "n", 0, 7, "passage")])
    with SlowServer(mode) as server:
        llm = OpenAILLM(server.url, "qwen3:4b", **CLIENT)
        error, elapsed = timed(lambda: llm.answer(prompt))
    assert RETRIES + 1 - 0.1 < elapsed < BOUND, elapsed
    assert f"openai model 'qwen3:4b' {server.url}/v1/chat/completions: timed out after 1 s" in str(error)
    assert len(server.requests) == RETRIES + 1


@pytest.mark.parametrize("mode", ["trickle_body", "hang"])
def test_ollama_chat_fails_at_the_deadline(mode):
    with SlowServer(mode) as server:
        error, elapsed = timed(lambda: OllamaLLM(server.url, "qwen3:4b", **CLIENT))
    assert elapsed < BOUND and f"{server.url}/api/show: timed out" in str(error)


def test_the_default_retries_bound_the_wait():
    """The LLM's own defaults (4 retries) with a short timeout: five attempts, then the error."""
    prompt = make_prompt("1", "question?", [Unit("c1", "n", 0, 7, "passage")])
    with SlowServer("trickle_body", every=0.1) as server:
        llm = OpenAILLM(server.url, "qwen3:4b", timeout=0.3, backoff=0.01)
        error, elapsed = timed(lambda: llm.answer(prompt))
    assert len(server.requests) == 5 and "after 5 attempts" in str(error)
    assert elapsed < 5 * 0.3 + 1.5, elapsed


def test_the_deadline_holds_through_an_environment_proxy(monkeypatch):
    """HTTP_PROXY is honoured as httpx would, and the proxy's answer is bounded the same way."""
    with SlowServer("trickle_body") as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        target = f"http://127.0.0.1:{free_port()}"  # nothing listens: only the proxy can answer
        emb = OpenAIEmbedder(target, "e5-small", **CLIENT)
        error, elapsed = timed(lambda: emb.embed(["a text"], "passage"))
    assert elapsed < BOUND and "timed out" in str(error)
    assert proxy.requests == [f"{target}/v1/embeddings"] * (RETRIES + 1)


def test_the_llm_deadline_settings():
    defaults = Settings.from_env({})
    assert (defaults.llm_timeout, defaults.llm_retries) == (120.0, 4)
    chosen = Settings.from_env({"RAG_LLM_TIMEOUT": "2.5", "RAG_LLM_RETRIES": "0"})
    assert (chosen.llm_timeout, chosen.llm_retries) == (2.5, 0)
    with pytest.raises(
        SettingsError, match=r"RAG_LLM_TIMEOUT='0' is not valid: expected seconds per request, > 0"
    ):
        Settings.from_env({"RAG_LLM_TIMEOUT": "0"})
    with pytest.raises(
        SettingsError, match=r"RAG_LLM_RETRIES='-1' is not valid: expected an integer from 0 to 20"
    ):
        Settings.from_env({"RAG_LLM_RETRIES": "-1"})


class RetryAfterServer(LocalServer):
    """Answers the first `busy` requests 503 with `Retry-After: <seconds>`, then as Ollama's
    /api/show and /api/embed both would."""

    def __init__(self, seconds: str, busy: int = 1_000):
        self.requests = 0
        outer = self

        class Handler(JsonHandler):
            def do_POST(self):
                self.read_json()
                outer.requests += 1
                if outer.requests <= busy:
                    return self.reply(503, {"error": "loading model"}, {"Retry-After": seconds})
                body = {"digest": "d", "model_info": {"bert.embedding_length": 2}, "embeddings": [[0.1, 0.2]]}
                return self.reply(200, body)

        self.serve(Handler)


def in_thread(call, outer_timeout: float = 60.0):
    """`call()`'s result or exception; None for either when it has not finished by `outer_timeout`
    (the old client slept 120 s per Retry-After)."""
    result: dict = {}

    def run():
        try:
            result["value"] = call()
        except Exception as exc:  # handed to the test
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(outer_timeout)
    return result.get("value"), result.get("error")


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (
            lambda url: OllamaEmbedder(
                url, "bge-m3", identity={"digest": "d", "dim": 2}, timeout=0.5, max_retries=2
            ),
            "ollama (model 'bge-m3') {url}/api/show: HTTP 503, asked to retry after 600 s, more than the "
            "{left} s left of RAG_EMBED_TIMEOUT x attempts (0.5 s x 3); raise RAG_EMBED_TIMEOUT or try later",
        ),
        (
            lambda url: OpenAILLM(url, "qwen3:4b", timeout=0.5, max_retries=2),
            "openai model 'qwen3:4b' {url}/v1/chat/completions: HTTP 503, asked to retry after 600 s, more "
            "than the {left} s left of RAG_LLM_TIMEOUT x attempts (0.5 s x 3); raise RAG_LLM_TIMEOUT or try later",
        ),
    ],
)
def test_a_retry_after_beyond_the_budget_fails_at_once_naming_the_wait(make, what):
    prompt = make_prompt("1", "question?", [Unit("c1", "n", 0, 7, "passage")])
    with RetryAfterServer("600") as server:
        client = make(server.url)
        call = (
            (lambda: client.embed(["a text"], "passage"))
            if hasattr(client, "embed")
            else (lambda: client.answer(prompt))
        )
        _, error = in_thread(call)
    assert isinstance(error, (EmbeddingError, LLMError)), error
    pattern = re.escape(what.format(url=server.url, left="LEFT")).replace("LEFT", "[01]")
    assert re.fullmatch(pattern, str(error)), str(error)
    assert server.requests == 1  # not retried: the wait asked for cannot be honoured


def test_a_retry_after_within_the_budget_is_honoured_and_logged(caplog):
    with RetryAfterServer("0", busy=1) as server:
        emb = OllamaEmbedder(
            server.url, "bge-m3", identity={"digest": "d", "dim": 2}, timeout=5, max_retries=2
        )
        with caplog.at_level(logging.WARNING, logger="rag_pipeline.http"):
            vectors, error = in_thread(lambda: emb.embed(["a text"], "passage"))
    assert error is None and vectors.shape == (1, 2) and server.requests == 3  # show (503), show, embed
    assert caplog.messages == [
        f"ollama (model 'bge-m3') {server.url}/api/show: HTTP 503: loading model; waiting 0.0 s as the "
        "server asked (Retry-After), then attempt 2 of 3"
    ]
