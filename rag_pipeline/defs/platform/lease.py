"""The executor of runs on an object-store data directory: each run holds the directory's lease
(lib/core/lease.py) while it executes, so a run of another Dagster instance waits for it (runs.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import dagster as dg

from rag_pipeline.defs.platform.internals.execution import around_runs
from rag_pipeline.defs.platform.runs import busy_message
from rag_pipeline.lib.core.lease import Lease
from rag_pipeline.lib.core.storage import location


def leased(executor_def: dg.ExecutorDefinition, data_dir: str) -> dg.ExecutorDefinition:
    """`executor_def`, each of whose runs holds the lease of the object-store data directory
    `data_dir` while it executes (a local one: `executor_def` itself)."""
    if not data_dir.startswith("s3://"):
        return executor_def

    def held(_, run: dg.DagsterRun, log: dg.DagsterLogManager, events: Iterator) -> Iterator:
        lease = Lease(location(data_dir), run.run_id)
        try:
            lease.take(
                lambda other: log.warning(f"waiting: {busy_message(data_dir, other.run_id, other.where())}")
            )
            if (expired := lease.taken_over) is not None:
                log.warning(
                    f"the lease of {data_dir} held by run {expired.run_id} ({expired.where()}) expired "
                    "without being renewed: this run took it over"
                )
            with contextlib.closing(events):
                for event in events:
                    yield event
                    lease.check()
        finally:
            lease.release()

    return around_runs(executor_def, held)
