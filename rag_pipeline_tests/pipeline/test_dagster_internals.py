"""What the project takes from Dagster's private modules, all in `defs/platform/internals/`: each
piece is exercised here on a real instance, so an upgrade of Dagster that moves one fails here first,
naming it (that no other module imports a private module of Dagster: rag_pipeline_tests/test_layers.py)."""

import importlib
import logging
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg

from rag_pipeline.defs.platform.internals import events, execution, launch, reads
from rag_pipeline.defs.platform.launcher import LocalRunLauncher
from rag_pipeline_tests.support.runs import recorded_run


def test_an_observation_reported_outside_a_run_carries_its_data_version():
    instance = dg.DagsterInstance.ephemeral()
    key = dg.AssetKey("notes_head")
    assert reads.latest_data_version(instance, key) == "INITIAL"
    instance.report_runless_asset_event(events.observation(key, "abc123"))
    assert reads.latest_data_version(instance, key) == "abc123"


def test_a_materialization_records_its_data_version_and_a_check_can_fail_it_later():
    @dg.asset(check_specs=[dg.AssetCheckSpec("outputs_intact", asset="made")])
    def made():
        return dg.MaterializeResult(
            data_version=dg.DataVersion("v1"), check_results=[dg.AssetCheckResult(passed=True)]
        )

    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([made], instance=instance).success
    assert reads.latest_data_version(instance, made.key) == "v1"
    record = instance.fetch_materializations(made.key, limit=1).records[0]
    instance.report_runless_asset_event(events.failed_check(made.key, "outputs_intact", record, "gone"))
    check = dg.AssetCheckKey(made.key, "outputs_intact")
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key([check])[check]
    evaluation = latest.event.dagster_event.event_specific_data
    assert not evaluation.passed and evaluation.target_materialization_data.storage_id == record.storage_id


def test_the_stale_status_reads_a_new_code_version():
    def graph(version: str):
        @dg.asset(code_version=version)
        def made():
            return 1

        return [made]

    class Stale(dg.AutomationCondition):
        def evaluate(self, context):
            held = "CODE" in reads.stale_categories(context)
            return dg.AutomationResult(
                context, context.candidate_subset if held else context.get_empty_subset()
            )

    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize(graph("1"), instance=instance).success
    for version, stale in (("1", False), ("2", True)):
        assets = [a.with_attributes(automation_condition=Stale()) for a in graph(version)]
        result = dg.evaluate_automation_conditions(defs=assets, instance=instance)
        assert (result.total_requested == 1) is stale


def test_a_run_created_before_it_starts_carries_the_origin_the_ui_reexecutes_with(tmp_path):
    from rag_pipeline.definitions import reconstructable_job

    job = dg.reconstructable(reconstructable_job)
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        run = launch.create_run(
            instance, job, [dg.AssetKey("source_notes")], {}, {"t": "1"}, "rag_pipeline.definitions"
        )
        assert run.status == dg.DagsterRunStatus.NOT_STARTED
        assert run.remote_job_origin is not None and run.job_code_origin is not None


def test_the_local_run_launcher_reports_a_dead_worker_as_failed():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with dg.instance_for_test() as instance:
        launcher = LocalRunLauncher()
        launcher.register_instance(instance)
        assert launcher.supports_check_run_worker_health
        for process, status in ((f"{gone.pid}@", "FAILED"), ("1@", "RUNNING")):
            run = recorded_run(instance, dg.DagsterRunStatus.STARTED, process)
            assert launcher.check_run_worker_health(run).status.value == status


def test_make_devs_dagster_yaml_names_the_local_run_launcher():
    """The launcher the Makefile writes into `make dev`'s dagster.yaml imports: a move of its module
    fails here, not in a user's daemon."""
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    module, name = re.search(r"run_launcher:\\n  module: ([\w.]+)\\n  class: (\w+)", makefile).groups()
    assert getattr(importlib.import_module(module), name) is LocalRunLauncher
    # and the module the dagster.yaml files written before the platform wing name
    assert importlib.import_module("rag_pipeline.defs.dagster_internals").LocalRunLauncher is LocalRunLauncher


AROUND: list[str] = []  # what `around_job`'s run did, in order


def around_job() -> dg.JobDefinition:
    """A job of one op whose in-process executor passes each run through `around`."""

    def around(instance, run, log, events):
        AROUND.append(f"before {run.run_id}")
        yield from events
        AROUND.append("after")

    @dg.op
    def step() -> None:
        AROUND.append("step")

    @dg.job(executor_def=execution.around_runs(dg.in_process_executor, around))
    def around_job():
        step()

    return around_job


def test_an_executor_runs_each_whole_run_inside_around_and_keeps_its_name_and_schema():
    wrapped = execution.around_runs(dg.multiprocess_executor, lambda instance, run, log, events: events)
    assert wrapped.name == "multiprocess"
    assert wrapped.config_schema is dg.multiprocess_executor.config_schema
    assert wrapped.get_requirements({}) == dg.multiprocess_executor.get_requirements({})
    with dg.instance_for_test() as instance:
        result = dg.execute_job(dg.reconstructable(around_job), instance)
    assert result.success and [f"before {result.run_id}", "step", "after"] == AROUND


def test_a_wrapped_executor_answers_for_the_executor_it_wraps():
    """dagster-celery's execution loop asks its executor for `app_args()`: the wrapper passes every
    attribute it does not have to the executor inside (RAG_EXECUTOR=celery on an s3:// directory)."""
    from dagster_celery.executor import CeleryExecutor

    inner = CeleryExecutor.for_cli(broker="redis://127.0.0.1:1/0", backend="redis://127.0.0.1:1/1")
    wrapped = execution._AroundExecutor(inner, lambda instance, run, log, events: events)
    assert wrapped.app_args() == inner.app_args() and wrapped.broker == "redis://127.0.0.1:1/0"
    assert wrapped.retries is inner.retries


def test_a_step_that_gives_its_blocking_check_no_result_is_not_warned_of(caplog):
    """The warning `execution.quiet_ungated` drops is the one Dagster gives, by the logger it names."""

    @dg.multi_asset(
        specs=[dg.AssetSpec("kept")],
        check_specs=[dg.AssetCheckSpec("fine", asset="kept", blocking=True)],
        can_subset=True,
    )
    def kept():
        yield dg.MaterializeResult()

    @dg.asset(deps=[kept])
    def after() -> None:
        return None

    def warned() -> list[str]:
        caplog.clear()
        assert dg.materialize([kept, after], instance=dg.DagsterInstance.ephemeral()).success
        return [r.getMessage() for r in caplog.records if r.name == execution.PLAN_LOGGER]

    plan = logging.getLogger(execution.PLAN_LOGGER)
    filters = list(plan.filters)
    plan.filters.clear()  # lineage, imported by the suite, installed it already
    try:
        assert [m for m in warned() if execution.UNGATED in m]
        execution.quiet_ungated()
        assert warned() == []
    finally:
        plan.filters[:] = filters
