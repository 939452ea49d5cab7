"""A run `make run` made can be re-executed from the Dagster UI: the run carries the origin of
`workspace.yaml`'s code location, which the UI's *Re-execute* looks the job up by. A real
`dagster-webserver` on 127.0.0.1, driven through its GraphQL API as the button drives it."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rag_pipeline.settings import PROJECT_ROOT
from rag_pipeline_tests.support.runs import cli, until
from rag_pipeline_tests.support.services import free_port
from scripts.screenshots import graphql

LOADED = "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"
LAST_RUN = "{ runsOrError(limit: 1) { ... on Runs { results { runId status parentRunId } } } }"
REEXECUTE = """mutation { launchRunReexecution(reexecutionParams: {parentRunId: "%s", strategy: ALL_STEPS}) {
  __typename ... on PythonError { message } } }"""


@pytest.mark.slow
def test_the_ui_reexecutes_a_run_make_run_made(tmp_path: Path):
    env = {"RAG_DATA_DIR": str(tmp_path / "data"), "RAG_EMBEDDER": "hashing", "RAG_STRATEGIES": "fixed-1000"}
    made = cli("rag_pipeline.run", [], env, tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr

    base = f"http://127.0.0.1:{free_port()}"
    webserver = Path(sys.executable).parent / "dagster-webserver"
    command = [str(webserver), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", base.rsplit(":", 1)[1]]
    home = {"DAGSTER_HOME": str(tmp_path / "dagster_home")}
    with open(tmp_path / "webserver.log", "w") as log:
        server = subprocess.Popen(
            command,
            cwd=PROJECT_ROOT,
            env=os.environ | home | env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        until(
            lambda: all(
                e["loadStatus"] == "LOADED"
                for e in graphql(base, LOADED)["workspaceOrError"]["locationEntries"]
            )
        )
        parent = graphql(base, LAST_RUN)["runsOrError"]["results"][0]
        launched = graphql(base, REEXECUTE % parent["runId"])["launchRunReexecution"]
        assert launched["__typename"] == "LaunchRunSuccess", launched

        def child_ended():
            run = graphql(base, LAST_RUN)["runsOrError"]["results"][0]
            ended = run["parentRunId"] == parent["runId"] and run["status"] in (
                "SUCCESS",
                "FAILURE",
                "CANCELED",
            )
            return run if ended else None

        assert until(child_ended)["status"] == "SUCCESS", (tmp_path / "webserver.log").read_text()[-3000:]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
