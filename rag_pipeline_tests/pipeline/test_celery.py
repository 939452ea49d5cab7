"""A real distributed engine as an operator runs it (docs/scaling-out.md): Redis, PostgreSQL and
Celery workers on 127.0.0.1 started as `make services` and `make worker` start them (one Redis and
Postgres for the module), `make run` in a process of its own (`python -m rag_pipeline.run`), and the
data directory on an S3 server (moto) or a local disk:

- two workers and the launcher on one `s3://` data directory build cold, then after a one-note
  commit, the reports of an in-process build; a worker started with another `RAG_DATA_DIR` writes
  in the run's, and steps run on both workers, lanes side by side;
- the only worker killed (-9) holding a step: the launcher fails the step within
  `RAG_CELERY_TASK_TIMEOUT` + 60 s and a few seconds, naming it, and a rerun with a worker back
  gives a fresh build's reports;
- a worker with another `RAG_ANALYZER`, and workers with another `RAG_SHARDS` (whose job has other
  assets), refuse the run's steps: the launcher says which variable, with both values, and nothing
  is written."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.defs.platform.runs import unfinished_steps
from rag_pipeline.lib.core import location
from rag_pipeline.settings import PROJECT_ROOT
from rag_pipeline_tests.support.repos import commit_files
from rag_pipeline_tests.support.runs import assert_same_reports, run_all
from rag_pipeline_tests.support.services import missing, services, worker, workers
from rag_pipeline_tests.support.steps import side_by_side, started_on, step_spans

STRATEGIES = {"RAG_STRATEGIES": "fixed-500,section", "RAG_RETRIEVERS": "dense,bm25,rrf"}  # two lanes

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]


@pytest.fixture(scope="module")
def cluster():
    """Redis and Postgres for the module's tests (each test its own workers and data directory)."""
    with services() as env:
        yield env


def make_run(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rag_pipeline.run"],
        cwd=PROJECT_ROOT,
        env=os.environ | env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def ran(env: dict[str, str], timeout: float = 900) -> tuple[int, str]:
    launcher = make_run(env)
    out = launcher.communicate(timeout=timeout)[0]
    return launcher.returncode, out


def test_two_workers_on_an_s3_data_directory_build_as_one_process_does(
    small_env, notes_repo, cluster, s3, tmp_path: Path
):
    local = small_env | STRATEGIES
    env = local | cluster | {"RAG_EXECUTOR": "celery", "RAG_DATA_DIR": s3}
    elsewhere = tmp_path / "elsewhere"
    logs = tmp_path / "logs"
    logs.mkdir()
    with (
        worker("one", env, logs / "one.log"),
        worker("two", env | {"RAG_DATA_DIR": str(elsewhere)}, logs / "two.log"),
    ):
        for edit in range(2):
            if edit:  # a one-note commit
                commit_files(
                    notes_repo, {"content/notes/net/tcp-handshake/index.md": EDITED}, "edit one note"
                )
            expected = tmp_path / f"in_process_{edit}"
            assert run_all(local | {"RAG_DATA_DIR": str(expected)}).success
            code, out = ran(env)
            assert code == 0 and "error" not in out.lower(), out[-3000:]
            # the same rows; an edited table has more versions than a fresh one
            assert_same_reports(
                location(s3) / "reports", expected / "reports", ignore=("table_version",) * edit
            )
            if not edit:
                with dg.DagsterInstance.from_config(cluster["DAGSTER_HOME"]) as instance:
                    spans = step_spans(instance, instance.get_runs(limit=1)[0].run_id)
    assert not elsewhere.exists()  # worker two wrote in the run's data directory
    assert {span.worker.split("@")[0] for span in spans} == {"one", "two"}, spans
    assert side_by_side(spans) > 0, spans  # lane steps overlapped


EDITED = """---
title: "TCP handshake"
---
A TCP connection starts with a three-way handshake: SYN, SYN-ACK and ACK.

### Why three messages
Each side must learn that the other received its initial sequence number.
Two messages would leave the server unsure whether the client saw its SYN-ACK.

### Closing
A connection ends with FIN and ACK from each side.
"""


def kill_holding_a_step(process: subprocess.Popen, name: str, home: str) -> str:
    """Kill (-9) the worker `name` (the process group of `process`) 1 s into a step of the latest
    run that it still holds then (stopped first, so that it holds what it holds): the step."""
    deadline, tried = time.monotonic() + 600, set()
    with dg.DagsterInstance.from_config(home) as instance:
        while time.monotonic() < deadline:
            runs = instance.get_runs(limit=1)
            run_id = runs[0].run_id if runs else ""
            steps = started_on(instance, run_id) if runs else {}
            fresh = [s for s, on in steps.items() if on.startswith(f"{name}@") and s not in tried]
            if fresh and fresh[-1] in unfinished_steps(instance, run_id):
                tried.add(fresh[-1])
                time.sleep(1.0)
                os.killpg(process.pid, signal.SIGSTOP)
                if fresh[-1] in unfinished_steps(instance, run_id):
                    os.killpg(process.pid, signal.SIGKILL)
                    return fresh[-1]
                os.killpg(process.pid, signal.SIGCONT)
            time.sleep(0.1)
    raise AssertionError(f"worker {name} held no step of the run 1 s after starting it")


def test_the_only_worker_lost_with_a_step_fails_it_in_bounded_time_and_a_rerun_finishes(
    small_env, cluster, tmp_path: Path
):
    local = small_env | STRATEGIES
    env = local | cluster | {"RAG_EXECUTOR": "celery", "RAG_DATA_DIR": str(tmp_path / "celery")}
    env["RAG_CELERY_TASK_TIMEOUT"] = "60"
    logs = tmp_path / "logs"
    logs.mkdir()
    with worker("one", env, logs / "one.log") as one:
        launcher = make_run(env)
        step = kill_holding_a_step(one, "one", cluster["DAGSTER_HOME"])
        killed = time.monotonic()
        try:
            out = launcher.communicate(timeout=400)[0]
        finally:
            launcher.kill()
        took = time.monotonic() - killed
    (logs / "launcher.log").write_text(out)
    assert launcher.returncode == 1, out[-3000:]
    assert took < 200, (took, out[-3000:])  # 60 s + 60 s, and the looks' and the run's ends
    assert f"LOST  {step}: its worker one@" in out, out[-3000:]
    assert f"FAILED  {step}: worker one@" in out and "no worker answers for 120 s" in out, out[-3000:]
    assert run_all(local | {"RAG_DATA_DIR": str(tmp_path / "in_process")}).success
    with workers(["one"], env, logs / "again"):
        code, again = ran(env)
    assert code == 0 and "error" not in again.lower(), again[-3000:]
    assert_same_reports(tmp_path / "celery" / "reports", tmp_path / "in_process" / "reports")


@pytest.mark.parametrize(
    ("launcher", "workers_env", "line"),
    [
        ({}, {"RAG_ANALYZER": "sudachi"}, "RAG_ANALYZER=sudachi here, char in the run"),
        ({"RAG_SHARDS": "1"}, {"RAG_SHARDS": "4"}, "RAG_SHARDS=4 here, 1 in the run"),
    ],
    ids=["analyzer", "shards"],
)
def test_a_worker_with_other_settings_refuses_the_runs_steps_in_one_line(
    small_env, cluster, tmp_path: Path, launcher, workers_env, line
):
    data = tmp_path / "data"
    env = small_env | STRATEGIES | cluster | {"RAG_EXECUTOR": "celery", "RAG_DATA_DIR": str(data)}
    with workers(["one"], env | workers_env, tmp_path / "logs"):
        code, out = ran(env | launcher, timeout=300)
    assert code == 1, out[-3000:]
    [refused] = [s for s in out.splitlines() if "FAILED" in s]
    assert refused.startswith("  FAILED  source_notes: worker one@") and refused.endswith(
        f"refuses it: {line}: start this worker with the run's settings (the launcher's RAG_* variables)"
    ), out[-3000:]
    assert not data.exists()  # nothing written


def test_make_runs_display_says_a_stopped_database_and_broker_in_a_line_each_and_goes_on(cluster):
    """`make run`'s display (`follow`) while Postgres and Redis are stopped and started again, and
    the workers' watch while Redis alone is: a line for each, no traceback, and they go on."""
    from rag_pipeline.cli.progress import REQUEST_TAG, Progress, follow
    from rag_pipeline.cli.workers import Watch
    from rag_pipeline.settings import Settings
    from rag_pipeline_tests.support.runs import until
    from rag_pipeline_tests.support.services import SCRIPT

    def services(command: str) -> None:
        subprocess.run([str(SCRIPT), command], env=os.environ | cluster, check=True, capture_output=True)

    shown: list[str] = []
    done = threading.Event()
    progress = Progress(echo=lambda text="", end="\n": shown.append(text))
    settings = Settings.from_env(cluster | {"RAG_EXECUTOR": "celery"})
    with dg.DagsterInstance.from_config(cluster["DAGSTER_HOME"]) as instance:
        run = instance.add_run(dg.DagsterRun(job_name="j", tags={REQUEST_TAG: "r1"}))
        shower = threading.Thread(target=follow, args=(instance, "r1", progress, done), daemon=True)
        shower.start()
        try:
            services("stop")
            [line] = until(lambda: [s for s in shown if "the Dagster instance" in s], timeout=180)
        finally:
            services("start")
        until(lambda: "  the Dagster instance answers again" in shown, timeout=180)
        done.set()
        shower.join()
        watch = Watch(settings, instance)
        subprocess.run(
            ["redis-cli", "-p", cluster["RAG_REDIS_PORT"], "shutdown", "nosave"], capture_output=True
        )
        try:
            [broker] = watch.look(run.run_id)
        finally:
            services("start")
        watch.last = 0.0  # look again at once
        again = watch.look(run.run_id)
    port = cluster["RAG_PG_PORT"]
    assert line.startswith(
        f"  the Dagster instance (Postgres postgresql+psycopg2://postgres@127.0.0.1:{port}/dagster) cannot be "
        "reached ("
    ) and line.endswith("): start it (`make services` starts Postgres on RAG_PG_PORT), then `make run` again")
    assert shown == [line, "  the Dagster instance answers again"]
    assert broker.startswith(
        f"  RAG_CELERY_BROKER={settings.celery_broker} cannot be reached ("
    ) and broker.endswith(
        "): start Redis (`make services` starts one on RAG_REDIS_PORT) or set it to a running one"
    )
    assert again == [f"  RAG_CELERY_BROKER={settings.celery_broker} answers again"]
