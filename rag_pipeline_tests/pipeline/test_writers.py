"""One writer per data directory: two runs started together on one data directory and a fresh
DAGSTER_HOME both end cleanly, the second waiting for the first, and no served table holds a
chunk_id twice."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_pipeline.settings import PROJECT_ROOT
from rag_pipeline_tests.support.served import open_table


@pytest.mark.slow
def test_two_cold_make_runs_started_together(small_env, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        "run_coordinator:\n  module: dagster.core.run_coordinator\n  class: DefaultRunCoordinator\n"
    )
    env = os.environ | small_env | {"RAG_STRATEGIES": "fixed-200,section", "DAGSTER_HOME": str(home)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "rag_pipeline.run"],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    data = Path(small_env["RAG_DATA_DIR"])
    for table in ("fixed_200", "section"):
        ids = open_table(data / "lancedb", table).read(["chunk_id"])["chunk_id"].to_pylist()
        assert ids and len(ids) == len(set(ids))
    # whichever came second either found nothing stale or reused what the first one made
    assert any("nothing is stale" in out or "reused" in out for out in outputs), outputs
