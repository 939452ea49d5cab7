"""Runs started as the UI starts them, and a run launcher that can tell whether a run's worker still
runs. No project module (the layers test): the launcher's health policy is a subclass's
(`defs/platform/launcher.py`)."""

from __future__ import annotations

import os
import sys

import dagster as dg
from dagster._core.definitions.repository_definition import SINGLETON_REPOSITORY_NAME
from dagster._core.execution.api import create_execution_plan, execute_run
from dagster._core.launcher import CheckRunHealthResult, LaunchRunContext, WorkerStatus
from dagster._core.remote_origin import ManagedGrpcPythonEnvCodeLocationOrigin, RemoteRepositoryOrigin
from dagster._core.snap import snapshot_from_execution_plan
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin


def create_run(
    instance: dg.DagsterInstance,
    job: dg.ReconstructableJob,
    keys: list[dg.AssetKey],
    run_config: dict,
    tags: dict[str, str],
    module: str,
) -> dg.DagsterRun:
    """A run of the reconstructable `job` materializing `keys`, created (not started) with the
    origin of workspace.yaml's code location (the Python `module` that defines it), so the UI can re-execute it, with the job's own checks
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
        executable_path=sys.executable, module_name=module, working_directory=os.getcwd()
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


class WorkerCheckingLauncher(dg.DefaultRunLauncher):
    """Dagster's default run launcher (a run worker process per run, started by the code server on
    this machine) whose run monitoring can end a run whose worker died, by a subclass's policy:
    `launch_tags()`, the tags each run it launches carries, and `worker_health(instance, run)`: True
    (it runs), False (it is gone) or None (this launcher cannot tell), with why. Gap: the default
    launcher cannot check its workers, so a killed run stays `STARTED` for good."""

    def launch_tags(self) -> dict[str, str]:
        return {}

    def worker_health(self, instance: dg.DagsterInstance, run: dg.DagsterRun) -> tuple[bool | None, str]:
        return None, "no policy"

    def launch_run(self, context: LaunchRunContext) -> None:
        self._instance.add_run_tags(context.dagster_run.run_id, self.launch_tags())
        super().launch_run(context)

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        alive, why = self.worker_health(self._instance, run)
        status = {True: WorkerStatus.RUNNING, False: WorkerStatus.FAILED, None: WorkerStatus.UNKNOWN}[alive]
        return CheckRunHealthResult(status, why or None)
