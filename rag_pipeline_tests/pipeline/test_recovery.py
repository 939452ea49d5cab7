"""A failure is not forgotten: after a failed or killed run, the next `make run` runs the failed steps
and all below them, and a run whose process died is marked failed; the automation sensor retries a
failing asset after a back-off, at once on a new input. The embedding server is a protocol stand-in
on 127.0.0.1 (fakes/openai_embed.py) that can be slow or down; git, Dagster and the CLI are real."""

import json
import os
import signal
import subprocess
import sys
import time

import dagster as dg
import pytest

from rag_pipeline.defs.platform.automation import requested
from rag_pipeline.defs.platform.runs import end_dead_runs
from rag_pipeline_tests.fakes.openai_embed import FakeOpenAIEmbeddings, openai_env
from rag_pipeline_tests.support.repos import NOTES, commit_files
from rag_pipeline_tests.support.runs import cli, make_run, project_definitions, recorded_run

TCP = "content/notes/net/tcp-handshake/index.md"
LANE = {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense,bm25"}


def edit(notes_repo, text: str) -> str:
    commit_files(notes_repo, {TCP: NOTES[TCP] + f"\n{text}\n"}, "edit")
    return notes_repo.head.commit.hexsha


def released(env: dict) -> str:
    current = os.path.join(env["RAG_DATA_DIR"], "release", "current.json")
    with open(current) as f:
        return json.load(f)["commit"]


@pytest.fixture
def built(small_env, tmp_path):
    """A first `make run` through the embedding server: (the server, the settings)."""
    with FakeOpenAIEmbeddings() as server:
        env = small_env | LANE | openai_env(server)
        assert cli("rag_pipeline.run", [], env, tmp_path).returncode == 0
        yield server, env


@pytest.mark.slow
def test_a_run_that_failed_on_a_server_outage_is_finished_by_the_next_make_run(notes_repo, built, tmp_path):
    server, env = built
    head = edit(notes_repo, "SYN cookies keep the backlog from filling.")
    server.down = True
    failed = cli("rag_pipeline.run", [], env, tmp_path)
    assert failed.returncode == 1, failed.stdout[-2000:]
    assert "FAILED  embeddings_section: " in failed.stdout and "did not run" in failed.stdout
    server.down = False
    done = cli("rag_pipeline.run", [], env, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "embeddings_section" in done.stdout.split("\n", 1)[0]  # the plan names the failed step
    assert released(env) == head
    assert "nothing is stale" in cli("rag_pipeline.run", [], env, tmp_path).stdout


@pytest.mark.slow
def test_a_killed_run_is_marked_failed_and_the_next_make_run_releases_its_commit(notes_repo, built, tmp_path):
    server, env = built
    head = edit(notes_repo, "A half-open connection is dropped after the retries.")
    server.delay = 2.0  # a slow server: the run is killed in the middle of embedding
    seen = len(server.texts)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_pipeline.run"],
        cwd=tmp_path,
        env=os.environ | {"DAGSTER_HOME": str(tmp_path / "dagster_home")} | env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ends = time.monotonic() + 300
    while server.in_flight == 0 and time.monotonic() < ends:
        time.sleep(0.05)
    assert server.in_flight, "the run never asked the server"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(server.texts) >= seen
    server.delay = 0.0
    done = cli("rag_pipeline.run", [], env, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "died at embeddings_section; marked failed" in done.stdout.splitlines()[0], done.stdout[:500]
    assert released(env) == head


def test_a_run_whose_process_is_gone_is_marked_failed_and_a_live_one_is_not():
    with dg.instance_for_test() as instance:
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        started, waits = dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.NOT_STARTED
        dead = recorded_run(instance, started, f"{gone.pid}@")
        waiting = recorded_run(instance, waits, f"{gone.pid}@")
        alive = recorded_run(instance, started, f"{os.getpid()}@")
        elsewhere = recorded_run(instance, started, "1@", host="another-host")
        lines = end_dead_runs(instance)
        assert sorted(lines) == sorted(
            [
                f"run {dead.run_id[:8]}… died; marked failed",
                f"run {waiting.run_id[:8]}… was never started by its process, which is gone; canceled",
            ]
        )
        status = {
            r.run_id: instance.get_run_by_id(r.run_id).status for r in (dead, waiting, alive, elsewhere)
        }
        assert status == {
            dead.run_id: dg.DagsterRunStatus.FAILURE,
            waiting.run_id: dg.DagsterRunStatus.CANCELED,
            alive.run_id: dg.DagsterRunStatus.STARTED,
            elsewhere.run_id: dg.DagsterRunStatus.STARTED,
        }
        assert end_dead_runs(instance) == []


def test_the_sensor_backs_off_a_failing_asset_and_a_new_input_retries_it_at_once(notes_repo, small_env):
    with FakeOpenAIEmbeddings() as server:
        env = small_env | LANE | openai_env(server) | {"RAG_RETRY_AFTER": "0.2,5"}  # 12 s, then 5 min
        instance = dg.DagsterInstance.ephemeral()
        assert make_run(project_definitions(env), instance)[1].success
        edit(notes_repo, "A first commit the server cannot embed.")
        server.down = True
        found, result = make_run(project_definitions(env), instance)
        assert not result.success and dg.AssetKey("embeddings_section") in found.requested
        defs = project_definitions(env)
        below = {"embeddings_section", "retrieval_section", "evaluation_section", "release"}
        assert not below & {k.to_user_string() for k in requested(defs, instance)}  # backing off
        time.sleep(12)
        assert below <= {k.to_user_string() for k in requested(defs, instance)}  # the first delay passed
        result = make_run(defs, instance)[1]
        assert not result.success
        time.sleep(12)
        assert not below & {k.to_user_string() for k in requested(defs, instance)}  # 5 min after two
        edit(notes_repo, "A second commit: a new input is tried at once.")
        server.down = False
        found, result = make_run(project_definitions(env), instance)
        assert below <= set(found.names()) and result.success
        assert found.after == {}
