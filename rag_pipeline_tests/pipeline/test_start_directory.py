"""`make run` started in another directory with relative paths: every process of the run reads them
as the start directory gives them, and a step that fails for the user's cause prints that cause."""

import os
import re

import pytest

from rag_pipeline.settings import PROJECT_ROOT
from rag_pipeline_tests.support.runs import cli

BROKEN_CHUNKER = "def spans(text, sections):\n    return {}['heading']\n"
WORKING_CHUNKER = "def spans(text, sections):\n    return [(0, len(text))]\n"


@pytest.mark.slow
def test_make_run_from_another_directory_with_relative_paths(notes_repo, questions_path, tmp_path):
    """Every process of the run reads the paths as the start directory gives them; a step that fails
    for the user's cause prints that cause as its one line, not Dagster's wrapper of it."""
    (tmp_path / "chunkers.py").write_text(BROKEN_CHUNKER)  # on the path below, beside the notes
    (tmp_path / "strategies.toml").write_text(
        '[[strategy]]\nname = "whole"\nkind = "python"\ncallable = "chunkers:spans"\n'
    )
    env = {
        "RAG_NOTES_REPO": "notes",
        "RAG_QUESTIONS": "questions.json",
        "RAG_DATA_DIR": "out",
        "RAG_STRATEGY_FILE": "strategies.toml",
        "RAG_STRATEGIES": "whole",
        "RAG_RETRIEVERS": "dense",
        "RAG_EMBEDDER": "hashing",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
    }
    failed = cli("rag_pipeline.run", [], env, tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    line = next((line for line in failed.stdout.splitlines() if "FAILED" in line), failed.stdout)
    assert re.fullmatch(
        r"  FAILED  chunks_whole: strategy 'whole' \(python:callable=chunkers:spans,version=src-\w+@\w+\), "
        r"note '[\w-]+': the chunker raised KeyError: 'heading'; fix the function \(or the note\)",
        line,
    ), line

    (tmp_path / "chunkers.py").write_text(WORKING_CHUNKER)
    done = cli("rag_pipeline.run", [], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "release" / "current.json").exists()
    assert not (PROJECT_ROOT / "out").exists()
