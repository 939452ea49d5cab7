"""The farm: a generated repository of notes and settings that evaluate one configuration on it."""

import pytest

from rag_pipeline_tests.support.farm import N_NOTES, fact, note, question, write_questions
from rag_pipeline_tests.support.repos import make_notes_repo


@pytest.fixture
def farm(tmp_path):
    """A repository of N_NOTES notes, one fact each, and settings that evaluate fixed-200 dense on it."""
    files = {f"content/notes/farm/farm-{i}/index.md": note(i, fact(i)[0]) for i in range(N_NOTES)}
    repo = make_notes_repo(tmp_path / "notes", files)
    env = {
        "RAG_NOTES_REPO": repo.working_tree_dir,
        "RAG_QUESTIONS": write_questions(tmp_path / "q.json", [question(i) for i in range(N_NOTES)]),
        "RAG_DATA_DIR": str(tmp_path / "out"),
        "RAG_EMBEDDER": "hashing",
        "RAG_STRATEGIES": "fixed-200",
        "RAG_RETRIEVERS": "dense",
    }
    return repo, env, tmp_path / "out" / "experiments"
