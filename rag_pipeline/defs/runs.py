"""One run at a time per data directory, kept by the Dagster instance's run storage (sqlite, or one
Postgres shared by several machines), not by a file on one disk.

Every run that writes a data directory carries its name in `DATA_DIR_TAG`: the job's runs, the
automation sensor's and those `make run` starts. With the queued run coordinator, the queue's
`tag_concurrency_limits` on that tag keeps a second run waiting; a run started beside the queue
(`make run`, the launchpad, an instance without a daemon) is refused at its first step when an
earlier active run holds the directory, naming that run.
"""

from __future__ import annotations

import os
import sys

import dagster as dg
from dagster._core.definitions.repository_definition import SINGLETON_REPOSITORY_NAME
from dagster._core.remote_origin import (
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

DATA_DIR_TAG = "rag/data_dir"
ACTIVE = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


class DataDirectoryBusy(Exception):
    """Another run writes the data directory."""


def data_dir_name(data_dir: str) -> str:
    """The tag value naming a data directory: a URL as given, a local path made absolute."""
    return data_dir if "://" in data_dir else os.path.abspath(data_dir)


def holder(instance: dg.DagsterInstance, run_id: str, name: str) -> dg.DagsterRun | None:
    """The active run created before `run_id` that holds the data directory `name`, if any: of
    two runs started at the same moment, the first one stored wins on every machine."""
    records = instance.get_run_records(dg.RunsFilter(tags={DATA_DIR_TAG: name}, statuses=ACTIVE))
    mine = instance.get_run_records(dg.RunsFilter(run_ids=[run_id]))
    if not mine:
        return None
    earlier = [r for r in records if r.storage_id < mine[0].storage_id]
    return min(earlier, key=lambda r: r.storage_id).dagster_run if earlier else None


def claim(context: dg.AssetExecutionContext, data_dir: str) -> None:
    """Tag this step's run with its data directory (a launchpad run has no tag yet), and refuse
    it when an earlier active run holds the directory."""
    name = data_dir_name(data_dir)
    if context.run.tags.get(DATA_DIR_TAG) != name:
        context.instance.add_run_tags(context.run.run_id, {DATA_DIR_TAG: name})
    other = holder(context.instance, context.run.run_id, name)
    if other is not None:
        raise DataDirectoryBusy(busy_message(name, other.run_id))


def busy_message(name: str, run_id: str) -> str:
    return (
        f"the data directory {name} is written by run {run_id}: wait for it to end, or terminate it "
        "in the UI (Runs) if its process is gone"
    )


def workspace_origin(job_name: str) -> RemoteJobOrigin:
    """The job as the UI knows it: in `workspace.yaml`'s code location (named after its module) and
    the one repository of a `Definitions`. A run created with it can be re-executed from the UI;
    `dg.execute_job` gives a run none, and the UI's *Re-execute* then fails."""
    target = LoadableTargetOrigin(
        executable_path=sys.executable, module_name="rag_pipeline.definitions", working_directory=os.getcwd()
    )
    location = ManagedGrpcPythonEnvCodeLocationOrigin(target)
    return RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME).get_job_origin(job_name)
