"""A real distributed engine: dagster-celery with Redis as broker and backend and the runs in
Postgres, all on 127.0.0.1 and started as `make services` and `make worker` start them. Two workers
build the bundled corpus cold (hashing embedder): the reports equal an in-process build's, the steps
are spread over both workers, and lane steps run side by side."""

from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.definitions import reconstructable_job
from rag_pipeline_tests.support.runs import assert_same_reports, run_all
from rag_pipeline_tests.support.services import missing, services, workers
from rag_pipeline_tests.support.steps import side_by_side, step_spans

STRATEGIES = "fixed-500,section"  # two lanes side by side, few steps to start

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]


def test_two_celery_workers_build_the_bundled_corpus_as_one_process_does(tmp_path: Path, monkeypatch):
    env = {"RAG_EMBEDDER": "hashing", "RAG_STRATEGIES": STRATEGIES, "RAG_RETRIEVERS": "dense,bm25,rrf"}
    assert run_all(env | {"RAG_DATA_DIR": str(tmp_path / "in_process")}).success
    with services() as cluster:
        env |= cluster | {"RAG_EXECUTOR": "celery", "RAG_DATA_DIR": str(tmp_path / "celery")}
        for name, value in env.items():
            monkeypatch.setenv(name, value)  # the run's process builds the job from the environment too
        with workers(["one", "two"], env, tmp_path / "logs"), dg.DagsterInstance.get() as instance:
            result = dg.execute_job(dg.reconstructable(reconstructable_job), instance=instance)
            assert result.success
            spans = step_spans(instance, result.run_id)
    assert_same_reports(tmp_path / "celery" / "reports", tmp_path / "in_process" / "reports")
    by_worker = {span.worker.split("@")[0] for span in spans}
    assert by_worker == {"one", "two"}, spans  # every step ran on a worker, and each worker ran some
    lanes = [s for s in spans if s.lane]
    assert any(a.start < b.end and b.start < a.end for a in lanes for b in lanes if a is not b), (
        lanes
    )  # at least two lane steps overlapped
    assert side_by_side(spans) > 0
