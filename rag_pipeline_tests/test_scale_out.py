"""Beyond one machine: the whole job under the multiprocess executor, its data directory on an
S3-compatible server (moto) on 127.0.0.1, gives the reports a local in-process run gives."""

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.definitions import build_assets, reconstructable_job
from rag_pipeline.lib.strategies import load_strategies
from rag_pipeline_tests.conftest import run_all

STRATEGIES = "fixed-500,section"  # two lanes: enough to run side by side, few processes to start
REPORTS = ["evaluation_summary.parquet", "question_ranks.parquet"]


def run_multiprocess(env: dict[str, str], monkeypatch) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # every step's process builds its resources from the environment
    monkeypatch.setenv("RAG_EXECUTOR", "multiprocess")
    with dg.instance_for_test() as instance:
        result = dg.execute_job(
            dg.reconstructable(reconstructable_job),
            instance=instance,
            run_config={"execution": {"config": {"max_concurrent": 4}}},
        )
        assert result.success


@pytest.mark.slow  # a process per step: about 90 s here
def test_multiprocess_run_gives_the_reports_of_an_in_process_run(small_env, tmp_path, monkeypatch):
    local = small_env | {"RAG_RETRIEVERS": "dense,bm25,rrf", "RAG_STRATEGIES": STRATEGIES}
    assert run_all(local, build_assets(load_strategies(STRATEGIES, None))).success
    remote = local | {"RAG_DATA_DIR": str(tmp_path / "mp")}
    run_multiprocess(remote, monkeypatch)
    for name in REPORTS:
        expected = pd.read_parquet(tmp_path / "out" / "reports" / name)
        got = pd.read_parquet(tmp_path / "mp" / "reports" / name)
        pd.testing.assert_frame_equal(got, expected)
