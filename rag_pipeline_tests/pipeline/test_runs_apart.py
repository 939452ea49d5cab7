"""Two `make run`s started together on one `s3://` data directory (moto on 127.0.0.1), from two
processes with their own TMPDIR (two machines) and one Dagster instance in PostgreSQL: both end
cleanly, one of them waits for the other (or finds nothing left to do), no served table holds a
chunk_id twice, and the reports are a fresh build's."""

import os
import sys
from pathlib import Path

import pytest

from rag_pipeline.lib.core import location
from rag_pipeline_tests.support.runs import assert_same_reports, at_once, run_all
from rag_pipeline_tests.support.served import assert_each_chunk_once
from rag_pipeline_tests.support.services import missing, services

STRATEGIES = "fixed-500,section"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]


def test_two_runs_on_one_s3_data_directory_and_one_postgres_instance_end_cleanly(
    small_env, tmp_path: Path, s3
):
    env = small_env | {"RAG_STRATEGIES": STRATEGIES, "RAG_RETRIEVERS": "dense,bm25"}
    assert run_all(env).success  # the fresh build to compare with, in tmp_path / "out"
    with services() as cluster:
        envs = []
        for machine in ("a", "b"):
            (tmp_path / machine).mkdir()
            envs.append(os.environ | env | cluster | {"RAG_DATA_DIR": s3, "TMPDIR": str(tmp_path / machine)})
        outputs = at_once([sys.executable, "-m", "rag_pipeline.run"], envs)
    # the one that lost the race waited for the other, or found everything built already
    assert any("waiting: the data directory" in out or "nothing is stale" in out for out in outputs), outputs
    assert_each_chunk_once(location(s3) / "lancedb", ["fixed_500", "section"])
    assert_same_reports(location(s3) / "reports", tmp_path / "out" / "reports", ignore=("table_version",))
