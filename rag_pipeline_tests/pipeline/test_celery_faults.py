"""Celery workers that are not as the run needs them, with Redis, Postgres and the workers on
127.0.0.1 as `make services` and `make worker` start them, and `make run` in a process of its own
(`python -m rag_pipeline.run`): a worker started with another RAG_DATA_DIR than the launcher writes
nothing there; a worker killed (-9) while it holds a step is named with the step by the launcher,
which ends within 400 s, and `make run` again gives an in-process build's reports."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.defs.runs import unfinished_steps
from rag_pipeline.settings import PROJECT_ROOT
from rag_pipeline_tests.support.runs import assert_same_reports, run_all
from rag_pipeline_tests.support.services import missing, services, worker, workers
from rag_pipeline_tests.support.steps import started_on, step_spans

ENV = {"RAG_EMBEDDER": "hashing", "RAG_STRATEGIES": "fixed-500,section", "RAG_RETRIEVERS": "dense,bm25,rrf"}

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]


def make_run(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rag_pipeline.run"],
        cwd=PROJECT_ROOT,
        env=os.environ | env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_a_worker_started_with_another_data_directory_writes_in_the_runs(tmp_path: Path, monkeypatch):
    assert run_all(ENV | {"RAG_DATA_DIR": str(tmp_path / "in_process")}).success
    elsewhere = tmp_path / "elsewhere"
    with services() as cluster:
        env = ENV | cluster | {"RAG_EXECUTOR": "celery", "RAG_DATA_DIR": str(tmp_path / "launcher")}
        monkeypatch.setenv("DAGSTER_HOME", cluster["DAGSTER_HOME"])
        logs = tmp_path / "logs"
        logs.mkdir()
        with (
            worker("one", env, logs / "one.log"),
            worker("two", env | {"RAG_DATA_DIR": str(elsewhere)}, logs / "two.log"),
        ):
            out = make_run(env).communicate(timeout=900)[0]
        with dg.DagsterInstance.get() as instance:
            spans = step_spans(instance, instance.get_runs(limit=1)[0].run_id)
    assert not elsewhere.exists(), out[-3000:]
    assert "two" in {span.worker.split("@")[0] for span in spans}, spans  # it ran steps of the run
    assert "run " in out and ": success" in out, out[-3000:]
    assert_same_reports(tmp_path / "launcher" / "reports", tmp_path / "in_process" / "reports")


def kill_holding_a_step(process: subprocess.Popen, name: str, instance: dg.DagsterInstance) -> str:
    """Kill (-9) the worker `name` (the process group of `process`) while it executes a step of the
    latest run: the step, found started on it and not ended while the worker is stopped."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        runs = instance.get_runs(limit=1)
        if runs:
            run_id = runs[0].run_id
            steps = [step for step, on in started_on(instance, run_id).items() if on.startswith(f"{name}@")]
            os.killpg(process.pid, signal.SIGSTOP)  # it holds what it holds now
            held = [s for s in steps if s in unfinished_steps(instance, run_id)]
            if held:
                os.killpg(process.pid, signal.SIGKILL)
                return held[-1]
            os.killpg(process.pid, signal.SIGCONT)
        time.sleep(0.2)
    raise AssertionError(f"worker {name} held no step of the run")


def test_a_worker_killed_with_a_step_is_named_and_a_rerun_finishes_the_build(tmp_path: Path, monkeypatch):
    assert run_all(ENV | {"RAG_DATA_DIR": str(tmp_path / "in_process")}).success
    with services() as cluster:
        env = ENV | cluster | {"RAG_EXECUTOR": "celery", "RAG_DATA_DIR": str(tmp_path / "celery")}
        env["RAG_CELERY_TASK_TIMEOUT"] = "120"
        monkeypatch.setenv("DAGSTER_HOME", cluster["DAGSTER_HOME"])
        logs = tmp_path / "logs"
        logs.mkdir()
        with (
            worker("two", env, logs / "two.log"),
            worker("one", env, logs / "one.log") as one,
            dg.DagsterInstance.get() as instance,
        ):
            launcher = make_run(env)
            step = kill_holding_a_step(one, "one", instance)
            try:
                out = launcher.communicate(timeout=400)[0]  # the launcher ends within 400 s of the kill
            finally:
                launcher.kill()
        (logs / "launcher.log").write_text(out)
        assert f"LOST  {step}: its worker one@" in out, out[-3000:]
        # the step ran again on the other worker, or the run failed naming it
        assert (launcher.returncode == 0 and f"{step}: runs again, on two@" in out) or (
            launcher.returncode == 1 and f"FAILED  {step}" in out
        ), out[-3000:]
        with workers(["one", "two"], env, logs / "again"):
            again = make_run(env).communicate(timeout=900)[0]
    assert "error" not in again.lower(), again[-3000:]
    assert_same_reports(tmp_path / "celery" / "reports", tmp_path / "in_process" / "reports")
