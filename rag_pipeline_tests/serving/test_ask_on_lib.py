"""`python -m rag_pipeline.ask` stands on lib alone: answering a question of a real release imports
no Dagster module (`-X importtime` lists every module the process imports)."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline_tests.support.runs import make_run, project_definitions


def imported(stderr: str) -> set[str]:
    """The modules `-X importtime` reported: `import time: self | cumulative | name`."""
    rows = [line.split("|") for line in stderr.splitlines() if line.startswith("import time:")]
    return {row[-1].strip() for row in rows if len(row) == 3}


@pytest.mark.slow
def test_ask_answers_a_release_without_importing_dagster(small_env):
    env = small_env | {"RAG_STRATEGIES": "fixed-1000", "RAG_RETRIEVERS": "dense"}
    assert make_run(project_definitions(env), dg.DagsterInstance.ephemeral())[1].success
    asked = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "rag_pipeline.ask", "Why does TCP need a third message?"],
        env=os.environ | env,
        capture_output=True,
        text=True,
    )
    assert asked.returncode == 0, asked.stderr[-2000:]
    assert "live fixed-1000" in asked.stdout and "answer (extractive" in asked.stdout
    modules = imported(asked.stderr)
    assert {"lancedb", "rag_pipeline.settings.models"} <= modules  # the list is read: the release served
    assert not sorted(m for m in modules if m.split(".")[0] == "dagster")
    assert (Path(env["RAG_DATA_DIR"]) / "asks").exists()  # and the question was recorded
