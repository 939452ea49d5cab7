"""The run launcher of `make dev`'s dagster.yaml (`rag_pipeline.defs.platform.launcher.LocalRunLauncher`):
Dagster's default launcher, whose run monitoring ends a run whose worker process died."""

import dagster as dg

from rag_pipeline.defs.platform.internals.launch import WorkerCheckingLauncher
from rag_pipeline.defs.platform.runs import HOST_TAG, dead
from rag_pipeline.lib.core.process import this_host


class LocalRunLauncher(WorkerCheckingLauncher):
    """The runs it launches carry this host; a worker's health is whether its process still runs,
    which only this host can tell."""

    def launch_tags(self) -> dict[str, str]:
        return {HOST_TAG: this_host()}

    def worker_health(self, instance: dg.DagsterInstance, run: dg.DagsterRun) -> tuple[bool | None, str]:
        if run.tags.get(HOST_TAG) != this_host():
            return None, "launched on another host"
        if dead(instance, run):
            return False, "the run worker's process is gone"
        return True, ""
