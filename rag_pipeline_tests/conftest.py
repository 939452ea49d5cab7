"""Fixtures every test can take: a small real git repository of notes, a questions file over it, the
settings of a run on them, and an S3-compatible server on 127.0.0.1."""

import json
import urllib.request
from pathlib import Path

import boto3
import git
import pytest
from moto.server import ThreadedMotoServer

from rag_pipeline_tests.support.repos import NOTES, QUESTIONS, make_notes_repo
from rag_pipeline_tests.support.runs import forget_reconstructed_jobs


@pytest.fixture
def notes_repo(tmp_path: Path) -> git.Repo:
    return make_notes_repo(tmp_path / "notes", NOTES)


@pytest.fixture
def questions_path(tmp_path: Path) -> Path:
    path = tmp_path / "questions.json"
    path.write_text(json.dumps(QUESTIONS, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def small_env(notes_repo, questions_path: Path, tmp_path: Path) -> dict[str, str]:
    """The RAG_* settings of a run on the small repository with the fast hashing embedder."""
    return {
        "RAG_NOTES_REPO": notes_repo.working_tree_dir,
        "RAG_QUESTIONS": str(questions_path),
        "RAG_DATA_DIR": str(tmp_path / "out"),
        "RAG_EMBEDDER": "hashing",
    }


@pytest.fixture
def s3(monkeypatch) -> str:
    """An empty bucket on a moto server on 127.0.0.1, its settings in the standard AWS_* variables."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    # moto keeps its buckets in the process, across servers: start from none
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST"))
    for name, value in {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    boto3.client("s3", endpoint_url=f"http://{host}:{port}").create_bucket(Bucket="rag-test")
    yield "s3://rag-test/run"
    server.stop()


@pytest.fixture(autouse=True)
def fresh_reconstructed_jobs():
    """Dagster keeps the job a `reconstructable` pointer last built (an `lru_cache` on the method),
    which would carry one test's RAG_* settings, its executor among them, into the next test that
    executes the same pointer in this process: each test builds its own."""
    forget_reconstructed_jobs()
