"""Everything this project takes from Dagster's private modules, and only here: an upgrade of Dagster
fails in this module first (rag_pipeline_tests/pipeline/test_dagster_internals.py names each piece).
Each function says which gap of the public API it fills; docs/assets.md lists them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.definitions.data_version import (
    DATA_VERSION_TAG,
    DEFAULT_DATA_VERSION,
    CachingStaleStatusResolver,
    extract_data_version_from_entry,
)
from dagster._core.definitions.repository_definition import SINGLETON_REPOSITORY_NAME
from dagster._core.events import DagsterEvent
from dagster._core.execution.api import create_execution_plan, execute_run
from dagster._core.execution.context.system import PlanOrchestrationContext
from dagster._core.execution.plan.plan import ExecutionPlan
from dagster._core.launcher import CheckRunHealthResult, LaunchRunContext, WorkerStatus
from dagster._core.remote_origin import ManagedGrpcPythonEnvCodeLocationOrigin, RemoteRepositoryOrigin
from dagster._core.snap import snapshot_from_execution_plan
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from rag_pipeline.defs.runs import HOST_TAG, dead
from rag_pipeline.lib.core.process import this_host


def latest_data_version(instance: dg.DagsterInstance, key: dg.AssetKey) -> str:
    """The data version of `key`'s latest materialization, else of its latest observation (a
    source), else the one Dagster records for a parent never observed. Gap: `get_asset_provenance`
    gives the versions a materialization was made from, but nothing public gives an asset's own."""
    record = instance.get_latest_data_version_record(key)
    version = None if record is None else extract_data_version_from_entry(record.event_log_entry)
    return (version or DEFAULT_DATA_VERSION).value


def observation(key: dg.AssetKey, version: str) -> dg.AssetObservation:
    """An observation of the source `key` at data `version`, to report outside a run. Gap: the
    public `AssetObservation` takes no data version (an observable source's own function returns
    one, but only inside a run)."""
    return dg.AssetObservation(key, tags={DATA_VERSION_TAG: version})


def stale_categories(context: dg.AutomationContext) -> set[str]:
    """Why the UI shows the asset unsynced: `CODE` (made by another code version), `DATA` (from
    other data versions of its parents), `DEPENDENCIES`. Gap: the stale status is not public."""
    view = context.asset_graph_view
    resolver = CachingStaleStatusResolver(
        view.instance, context.asset_graph, view, view.get_inner_queryer_for_back_compat()
    )
    return {cause.category.value for cause in resolver.get_stale_causes(context.key)}


def failed_check(key: dg.AssetKey, name: str, record: dg.EventLogRecord, why: str) -> dg.AssetCheckEvaluation:
    """A failed evaluation of the blocking check `name` of the materialization `record`, to report
    outside a run. Gap: the public `AssetCheckEvaluation` names its materialization through a
    private class."""
    return dg.AssetCheckEvaluation(
        asset_key=key,
        check_name=name,
        passed=False,
        metadata={"why": dg.MetadataValue.text(why)},
        target_materialization_data=AssetCheckEvaluationTargetMaterializationData(
            storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
        ),
        severity=dg.AssetCheckSeverity.ERROR,
        blocking=True,
    )


def create_run(
    instance: dg.DagsterInstance,
    job: dg.ReconstructableJob,
    keys: list[dg.AssetKey],
    run_config: dict,
    tags: dict[str, str],
) -> dg.DagsterRun:
    """A run of the reconstructable `job` materializing `keys`, created (not started) with the
    origin of workspace.yaml's code location, so the UI can re-execute it, with the job's own checks
    of those assets: a selection of assets alone adds every check of them, those the job leaves out
    too (`outputs_intact`, whose steps Dagster names differently in each process that plans them, so
    a step process of another executor ran another part of them and each run warned ~90 times).
    Gap: `dg.execute_job` creates and starts at once, and gives the run no origin (the UI's
    *Re-execute* then fails)."""
    definition = job.get_definition()
    keys_set = frozenset(keys)
    checks = frozenset(
        c for c in definition.asset_layer.asset_graph.asset_check_keys if c.asset_key in keys_set
    )
    subset = definition.get_subset(asset_selection=keys_set, asset_check_selection=checks)
    tags = {**definition.run_tags, **tags}  # the job's tags too, as a run of the UI gets them
    ref = instance.get_ref() if instance.is_persistent else None
    plan = create_execution_plan(subset, run_config=run_config, instance_ref=ref, tags=tags)
    target = LoadableTargetOrigin(
        executable_path=sys.executable, module_name="rag_pipeline.definitions", working_directory=os.getcwd()
    )
    location = ManagedGrpcPythonEnvCodeLocationOrigin(target)
    return instance.create_run(
        job_name=definition.name,
        run_config=run_config,
        tags=tags,
        step_keys_to_execute=plan.step_keys_to_execute,
        execution_plan_snapshot=snapshot_from_execution_plan(plan, subset.get_job_snapshot_id()),
        job_snapshot=subset.get_job_snapshot(),
        parent_job_snapshot=subset.get_parent_job_snapshot(),
        asset_selection=keys_set,
        asset_check_selection=checks,
        # a new run: no id, status, parent or op selection of its own
        **dict.fromkeys(
            ("run_id", "status", "root_run_id", "parent_run_id", "resolved_op_selection", "op_selection")
        ),
        remote_job_origin=RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME).get_job_origin(
            definition.name
        ),
        job_code_origin=job.get_python_origin(),
        asset_graph=subset.asset_layer.asset_graph,
    )


def start_run(instance: dg.DagsterInstance, job: dg.ReconstructableJob, run: dg.DagsterRun) -> dg.DagsterRun:
    """Execute the created `run` in this process, as `dg.execute_job` does. Gap: see `create_run`."""
    return execute_run(job, run, instance).dagster_run


class LocalRunLauncher(dg.DefaultRunLauncher):
    """Dagster's default run launcher (a run worker process per run, started by the code server on
    this machine), with what its run monitoring needs to end a run whose worker died: the runs it
    launches carry this host, and a worker's health is whether its process still runs. Gap: the
    default launcher cannot check its workers, so a killed run stays `STARTED` for good."""

    def launch_run(self, context: LaunchRunContext) -> None:
        self._instance.add_run_tags(context.dagster_run.run_id, {HOST_TAG: this_host()})
        super().launch_run(context)

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        if run.tags.get(HOST_TAG) != this_host():
            return CheckRunHealthResult(WorkerStatus.UNKNOWN, "launched on another host")
        if dead(self._instance, run):
            return CheckRunHealthResult(WorkerStatus.FAILED, "the run worker's process is gone")
        return CheckRunHealthResult(WorkerStatus.RUNNING)


# the instance, the run, its log, and its executor's events -> the events, the run held inside something
Around = Callable[
    [dg.DagsterInstance, dg.DagsterRun, dg.DagsterLogManager, Iterator[DagsterEvent]], Iterator[DagsterEvent]
]


class _AroundExecutor(dg.Executor):
    """`inner`, with its execution of a whole run passed through `around`; every other attribute
    is `inner`'s (dagster-celery's execution loop asks its executor for `app_args()`)."""

    def __init__(self, inner: dg.Executor, around: Around):
        self.inner, self.around = inner, around

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def execute(self, plan_context: PlanOrchestrationContext, execution_plan: ExecutionPlan):
        events = self.inner.execute(plan_context, execution_plan)
        yield from self.around(plan_context.instance, plan_context.dagster_run, plan_context.log, events)

    @property
    def retries(self):
        return self.inner.retries

    @property
    def step_dependency_config(self):
        return self.inner.step_dependency_config

    def get_step_event_or_retry_event(self, *args, **kwargs):
        return self.inner.get_step_event_or_retry_event(*args, **kwargs)


def around_runs(executor_def: dg.ExecutorDefinition, around: Around) -> dg.ExecutorDefinition:
    """`executor_def` (same name, config schema and requirements) whose execution of each run, in
    the run's own process, goes through `around`. Gap: nothing public runs code around a whole run
    in its process under every executor (resources are built per step process, hooks are per op)."""
    create = executor_def.executor_creation_fn
    assert create is not None, executor_def.name
    return dg.ExecutorDefinition(
        name=executor_def.name,
        config_schema=executor_def.config_schema,
        requirements=executor_def.get_requirements,
        executor_creation_fn=lambda init_context: _AroundExecutor(create(init_context), around),
        description=executor_def.description,
    )
