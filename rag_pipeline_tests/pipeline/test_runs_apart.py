"""Two `make run`s started together on one `s3://` data directory (moto on 127.0.0.1), from two
processes with their own TMPDIR (two machines) and one Dagster instance in PostgreSQL: both end
cleanly, one of them waits for the other (or finds nothing left to do), no served table holds a
chunk_id twice, and the reports are a fresh build's."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_pipeline.lib.core import location
from rag_pipeline.lib.serving import duplicate_chunk_ids
from rag_pipeline_tests.support.runs import assert_same_reports, run_all
from rag_pipeline_tests.support.served import open_table
from rag_pipeline_tests.support.services import missing, services

STRATEGIES = "fixed-500,section"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]


def test_two_runs_on_one_s3_data_directory_and_one_postgres_instance_end_cleanly(
    small_env, tmp_path: Path, s3
):
    env = small_env | {"RAG_STRATEGIES": STRATEGIES, "RAG_RETRIEVERS": "dense,bm25"}
    assert run_all(env).success  # the fresh build to compare with, in tmp_path / "out"
    with services() as cluster:
        runs = []
        for machine in ("a", "b"):
            (tmp_path / machine).mkdir()
            machine_env = os.environ | env | cluster | {"RAG_DATA_DIR": s3, "TMPDIR": str(tmp_path / machine)}
            runs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "rag_pipeline.run"],
                    env=machine_env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        outputs = [run.communicate(timeout=900)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [out[-3000:] for out in outputs]
    # the one that lost the race waited for the other, or found everything built already
    assert any("waiting: the data directory" in out or "nothing is stale" in out for out in outputs), outputs
    for table in ("fixed_500", "section"):
        assert duplicate_chunk_ids(open_table(location(s3) / "lancedb", table)) == 0
    assert_same_reports(location(s3) / "reports", tmp_path / "out" / "reports", ignore=("table_version",))
