"""Runs that write a data directory, and runs whose process died.

Every run that writes a data directory carries its name in `DATA_DIR_TAG`: the job's runs, the
automation sensor's and those `make run` starts. What keeps them apart is one rule (`lease.py`).

A run whose process was killed stays `STARTED` in the instance for good (Dagster's run monitoring
cannot check a run worker of the default run launcher). Runs carry the host and the process that
runs them (`HOST_TAG`, `PROCESS_TAG`; a run the daemon launched, the pid its run worker logged), so
`make run` and the daemon's run monitoring (`launcher.LocalRunLauncher`) mark such a run
failed, and it no longer holds the data directory or counts as in progress.

A run records the shared settings, the code and the asset graph it was started with (`SETTINGS_TAG`,
`CODE_TAG`, `GRAPH_TAG`, from the definitions that create it); a process whose own differ (a Celery
worker started with another `RAG_ANALYZER` or `RAG_SHARDS`, from another checkout, or reading another
strategies file) refuses its steps (`refusal`) before writing anything. The embedder is compared by
its identity, not its URL (`EMBEDDER_TAG`, `defs.identity`): each machine may ask its own server.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable

import dagster as dg

from rag_pipeline.lib.core.fingerprint import PACKAGE_ROOT, package_fingerprint
from rag_pipeline.lib.core.process import alive, this_host, this_process
from rag_pipeline.settings import Settings, shared_default

DATA_DIR_TAG = "rag/data_dir"
HOST_TAG = "rag/host"
PROCESS_TAG = "rag/process"  # `pid@start` of the process that executes the run
SETTINGS_TAG = "rag/settings"  # the shared settings the run was started with (JSON), `Settings.shared`
CODE_TAG = "rag/code"  # the fingerprint of the code it was started with
EMBEDDER_TAG = "rag/embedder"  # the embedding_version its own process embeds with (`defs.identity`)
GRAPH_TAG = "rag/graph"  # the shape of its asset graph: assets, their code versions, checks (`graph_tag`)
ENDED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
STARTED_WORKER = "Started process for run (pid: "  # Dagster's line when a run worker starts
ACTIVE = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
STEP_ENDS = {
    dg.DagsterEventType.STEP_SUCCESS,
    dg.DagsterEventType.STEP_FAILURE,
    dg.DagsterEventType.STEP_SKIPPED,
}


def data_dir_name(data_dir: str) -> str:
    """The tag value naming a data directory: a URL as given, a local path made absolute."""
    return data_dir if "://" in data_dir else os.path.abspath(data_dir)


def settings_tags(settings: Settings) -> dict[str, str]:
    """The tags that record `settings`' shared ones and this process's code in a run."""
    return {SETTINGS_TAG: json.dumps(settings.shared(), sort_keys=True), CODE_TAG: package_fingerprint()}


def graph_tag(assets: Iterable) -> str:
    """The asset graph `assets` (definitions of assets, checks, sources) make, in a line: how many
    assets and checks, and a digest of their keys and the assets' code versions (what a strategies
    file read by another process changes)."""
    versions, checks = [], []
    for a in assets:
        if isinstance(a, dg.SourceAsset):
            versions.append((a.key.to_user_string(), ""))
            continue
        versions += [(k.to_user_string(), a.code_versions_by_key.get(k) or "") for k in a.keys]
        checks += [c.to_user_string() for c in a.check_keys]
    versions, checks = sorted(versions), sorted(checks)
    digest = hashlib.sha256(json.dumps([versions, checks]).encode()).hexdigest()[:12]
    return f"{len(versions)} assets, {len(checks)} checks, {digest}"


def ended(run: dg.DagsterRun) -> str | None:
    """Why a step of `run` must not start now, in one line: the run has ended, marked failed or
    canceled (a step queued on a worker before that, or delivered again); None while it runs. Asked
    as a step starts, not as resources are made: a run's result makes them again once it ended."""
    if run.status in ENDED or run.status == dg.DagsterRunStatus.CANCELING:
        return f"run {run.run_id[:8]}… has ended ({run.status.value.lower()}): its step is not run"
    return None


def refusal(run: dg.DagsterRun, own: dict[str, str]) -> str | None:
    """Why a step of `run` must not run in this process, whose definitions carry the tags `own`
    (`settings_tags`), in one line; None when it may. A run without the tags (`dg.materialize`)
    records nothing to differ from."""
    if SETTINGS_TAG not in run.tags:
        return None
    if run.tags.get(CODE_TAG, own[CODE_TAG]) != own[CODE_TAG]:  # its settings may be other ones too
        return (
            f"the code here ({own[CODE_TAG]}, {PACKAGE_ROOT}) is not the run's ({run.tags[CODE_TAG]}): "
            "run the launcher's checkout on this worker"
        )
    recorded, here = json.loads(run.tags[SETTINGS_TAG]), json.loads(own[SETTINGS_TAG])
    differ = sorted(name for name in recorded.keys() | here.keys() if recorded.get(name) != here.get(name))
    if differ:
        values = "; ".join(
            f"{name}={here.get(name, shared_default(name))} here, "
            f"{recorded.get(name, shared_default(name))} in the run"
            for name in differ
        )
        return f"{values}: start this worker with the run's settings (the launcher's RAG_* variables)"
    if GRAPH_TAG in own and run.tags.get(GRAPH_TAG, own[GRAPH_TAG]) != own[GRAPH_TAG]:
        return (
            f"the asset graph here ({own[GRAPH_TAG]}) is not the run's ({run.tags[GRAPH_TAG]}), with the "
            "same settings and code: a file the definitions read (RAG_STRATEGY_FILE's) differs here"
        )
    return None


def here_tags() -> dict[str, str]:
    """The tags of a run this process executes."""
    return {HOST_TAG: this_host(), PROCESS_TAG: this_process()}


def worker_process(instance: dg.DagsterInstance, run: dg.DagsterRun) -> str | None:
    """The process that executes `run`: its tag, else the pid its run worker logged."""
    if PROCESS_TAG in run.tags:
        return run.tags[PROCESS_TAG]
    records = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=20)
    for record in records.records:
        message = record.event_log_entry.user_message or ""
        if message.startswith(STARTED_WORKER):
            return message[len(STARTED_WORKER) :].split(")", 1)[0]
    return None


def dead(instance: dg.DagsterInstance, run: dg.DagsterRun) -> bool:
    """Whether the active `run` was executed by a process of this host that is gone."""
    process = worker_process(instance, run)
    return run.tags.get(HOST_TAG) == this_host() and process is not None and not alive(process)


def unfinished_steps(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """The steps of a run that started and did not end."""
    kinds = {dg.DagsterEventType.STEP_START, *STEP_ENDS}
    started: dict[str, bool] = {}
    for record in instance.get_records_for_run(run_id, of_type=kinds).records:
        event = record.event_log_entry.dagster_event
        if event is not None and event.step_key:
            started[event.step_key] = event.event_type == dg.DagsterEventType.STEP_START
    return [step for step, running in started.items() if running]


def ended_steps(instance: dg.DagsterInstance, run_id: str) -> set[str]:
    """The steps of a run that ended (succeeded, failed or were skipped)."""
    records = instance.get_records_for_run(run_id, of_type=STEP_ENDS).records
    return {r.event_log_entry.step_key for r in records if r.event_log_entry.step_key}


def end_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark every active run whose process on this host is gone as failed (one that never started:
    canceled); what was found, a line each."""
    found = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=ACTIVE, tags={HOST_TAG: this_host()})):
        run = record.dagster_run
        if not dead(instance, run):
            continue
        steps = unfinished_steps(instance, run.run_id)
        where = f" at {', '.join(steps)}" if steps else ""
        if run.status == dg.DagsterRunStatus.NOT_STARTED:
            instance.report_run_canceled(run, "its process is gone before it started")
            found.append(f"run {run.run_id[:8]}… was never started by its process, which is gone; canceled")
        else:
            instance.report_run_failed(run, f"its process ({worker_process(instance, run)}) is gone{where}")
            found.append(f"run {run.run_id[:8]}… died{where}; marked failed")
    return found
