"""Beyond one machine: the whole job under the multiprocess executor, its data directory on an
S3-compatible server (moto) on 127.0.0.1, gives the reports a local in-process run gives."""

import json
import os
import sys
import threading

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.cli import show_report
from rag_pipeline.definitions import build_definitions, reconstructable_job
from rag_pipeline.defs.platform.lease import leased
from rag_pipeline.lib.core import location, read_frame, storage_options, write_bytes
from rag_pipeline.lib.core.lease import LEASE, Lease
from rag_pipeline.settings import Settings, SettingsError
from rag_pipeline_tests.support.runs import assert_same_reports, at_once, run_all, until
from rag_pipeline_tests.support.served import assert_each_chunk_once

STRATEGIES = "fixed-500,section"  # two lanes: enough to run side by side, few processes to start
REPORTS = [
    "evaluation_summary.parquet",
    "question_ranks.parquet",
    "serving.parquet",
    "answer_summary.parquet",
]


def test_a_location_on_s3_reads_writes_lists_and_deletes(s3):
    root = location(s3)
    write_bytes(b"one", root / "dir" / "segment-1.parquet")
    write_bytes(b"two", root / "dir" / "other.json")
    assert [p.name for p in (root / "dir").glob("segment-*.parquet")] == ["segment-1.parquet"]
    assert (root / "dir" / "other.json").read_text() == "two" and (root / "dir").exists()
    (root / "dir" / "segment-1.parquet").unlink()
    assert not (root / "dir" / "segment-1.parquet").exists() and str(root / "x") == f"{s3}/x"


def test_the_executor_and_lancedb_settings_come_from_the_environment(monkeypatch):
    for executor in ("in_process", "multiprocess", "celery"):
        defs = build_definitions(Settings.from_env({"RAG_EXECUTOR": executor}))
        assert defs.resolve_job_def("index_and_evaluate").executor_def.name == executor
    with pytest.raises(SettingsError, match="RAG_EXECUTOR='dask' is not valid"):
        Settings.from_env({"RAG_EXECUTOR": "dask"})
    for executor, module in [("celery", "dagster_celery"), ("k8s", "dagster_k8s")]:
        monkeypatch.setitem(sys.modules, module, None)  # as if its extra were not installed
        with pytest.raises(SettingsError) as missing:
            build_definitions(Settings.from_env({"RAG_EXECUTOR": executor}))
        assert str(missing.value) == (
            f"RAG_EXECUTOR={executor} needs the {executor} extra: pip install -e '.[{executor}]'"
        )
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert storage_options("/tmp/lancedb") is None
    assert storage_options(location("s3://bucket/lancedb")) == {
        "aws_region": "eu-west-1",
        "aws_access_key_id": "key",
        "aws_secret_access_key": "secret",
        "aws_endpoint": "http://127.0.0.1:9000",
        "allow_http": "true",
    }


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
def test_multiprocess_run_on_s3_gives_the_reports_of_a_local_in_process_run(
    small_env, tmp_path, s3, monkeypatch, capsys
):
    local = small_env | {"RAG_RETRIEVERS": "dense,bm25,rrf", "RAG_STRATEGIES": STRATEGIES}
    assert run_all(local).success  # the assets and resources `local` describes, as the job's
    run_multiprocess(local | {"RAG_DATA_DIR": s3}, monkeypatch)
    assert_same_reports(location(s3) / "reports", tmp_path / "out" / "reports")
    assert show_report.main() == 0 and "Every configuration" in capsys.readouterr().out  # reads S3 too
    assert (location(s3) / "lancedb" / "fixed_500.lance").exists()
    # the experiment ledger: the same experiment, with the same outcomes, on S3
    ledger, kept = location(s3) / "experiments", tmp_path / "out" / "experiments"
    assert (ledger / "current.json").read_text() == (kept / "current.json").read_text()
    outcomes = f"{json.loads((kept / 'current.json').read_text())['id']}/outcomes.parquet"
    pd.testing.assert_frame_equal(read_frame(ledger / outcomes), pd.read_parquet(kept / outcomes))


def marking_job() -> dg.JobDefinition:
    """A job of one op that writes `marker` into RAG_DATA_DIR, its executor holding the lease."""
    data_dir = os.environ["RAG_DATA_DIR"]

    @dg.op
    def mark() -> None:
        write_bytes(b"done", location(data_dir) / "marker")

    @dg.job(executor_def=leased(dg.in_process_executor, data_dir))
    def marking():
        mark()

    return marking


def test_a_run_waits_for_the_lease_another_instances_run_holds_then_holds_its_own(s3, monkeypatch):
    monkeypatch.setenv("RAG_DATA_DIR", s3)
    root = location(s3)
    other = Lease(root, "run-of-another-instance")
    other.take()
    with dg.instance_for_test() as instance:
        ran = {}
        job = dg.reconstructable(marking_job)
        runner = threading.Thread(target=lambda: ran.update(result=dg.execute_job(job, instance)))
        runner.start()

        def told() -> list[str]:
            runs = instance.get_runs(limit=1)
            logs = instance.all_logs(runs[0].run_id) if runs else []
            return [e.user_message for e in logs if e.user_message.startswith("waiting: ")]

        [line] = until(told, timeout=60, every_s=0.2)
        assert line.startswith(
            f"waiting: the data directory {s3} is written by run run-of-another-instance (host "
        )
        assert runner.is_alive() and not (root / "marker").exists()  # nothing runs while it waits
        other.release()
        runner.join()
        assert ran["result"].success and (root / "marker").exists()
        assert not (root / LEASE).exists()  # released at the run's end
    assert leased(dg.in_process_executor, "/tmp/data") is dg.in_process_executor  # the instance keeps it


@pytest.mark.slow  # two whole runs at once
def test_two_machines_building_one_s3_data_directory_at_once_both_succeed(
    small_env, tmp_path, s3, monkeypatch
):
    """Two `dagster job execute` on one S3 data directory, started together, each with its own
    TMPDIR and DAGSTER_HOME (two machines, no shared lock or instance): one run waits for the
    other's lease, saying so, and starts its steps after the other ended; both succeed, the shared
    vector store and tables survive both, and the reports are a fresh build's."""
    local = small_env | {"RAG_RETRIEVERS": "dense,bm25,rrf", "RAG_STRATEGIES": STRATEGIES}
    assert run_all(local).success  # the assets and resources `local` describes, as the job's
    envs = []
    for machine in ("a", "b"):
        for part in ("tmp", "home"):
            (tmp_path / machine / part).mkdir(parents=True)
        env = os.environ | local | {"RAG_DATA_DIR": s3, "TMPDIR": str(tmp_path / machine / "tmp")}
        envs.append(env | {"DAGSTER_HOME": str(tmp_path / machine / "home")})
    command = [sys.executable, "-m", "dagster", "job", "execute", "-m", "rag_pipeline.definitions"]
    outputs = at_once([*command, "-j", "index_and_evaluate"], envs)
    ended, first_step, waits = {}, {}, {}
    for machine, output in zip(("a", "b"), outputs):
        monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / machine / "home"))
        with dg.DagsterInstance.get() as instance:
            [record] = instance.get_run_records()
            run_id = record.dagster_run.run_id
            steps = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.STEP_START).records
        ended[run_id], first_step[run_id] = record.end_time, steps[0].timestamp
        waits[run_id] = [line for line in output.splitlines() if "waiting: the data directory" in line]
    [(waiter, [line])] = [(run_id, lines) for run_id, lines in waits.items() if lines]
    [holder] = set(waits) - {waiter}
    assert f"waiting: the data directory {s3} is written by run {holder} (host " in line
    assert first_step[waiter] > ended[holder]  # its steps started after the other run ended
    assert not (location(s3) / LEASE).exists()  # released
    assert_each_chunk_once(location(s3) / "lancedb", ["fixed_500", "section"])
    # the same rows; two runs' syncs leave more versions of a table than one run's
    assert_same_reports(location(s3) / "reports", tmp_path / "out" / "reports", ignore=("table_version",))
