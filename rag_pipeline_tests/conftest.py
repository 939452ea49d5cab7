"""Fixtures every test can take: a small real git repository of notes, a questions file over it, and
the settings of a run on them."""

import json
from pathlib import Path

import git
import pytest

from rag_pipeline_tests.support.repos import NOTES, QUESTIONS, make_notes_repo


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
