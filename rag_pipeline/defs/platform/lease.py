"""One rule keeps runs apart on a data directory: a run writes it only while no other run does.

- Runs of one instance (its run storage: sqlite, or one Postgres shared by several machines): with
  the queued run coordinator (`make dev`), the queue's `tag_concurrency_limits` on `DATA_DIR_TAG`
  keeps a second run waiting, Dagster's own mechanism. `make run` waits its turn (`wait_turn`:
  while an active run holds the tag, or a Celery worker still executes a step of an ended one), then
  creates its run and starts it unless an earlier-created active run holds the tag (`gave_way`): of
  two runs created at the same moment, the first one stored goes first on every machine, and the
  other waits and plans again, not fails.
- Runs of separate instances (two machines, each its own `DAGSTER_HOME`) cannot see each other's
  runs: on an object-store data directory a run also holds the directory's lease (lib/core/lease.py)
  from its first step to its end, in the run's own process under every executor (`leased`), and a
  run of another instance waits for it, saying for whom. A local data directory is kept by the
  instance alone.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import dagster as dg

from rag_pipeline.defs.platform.internals.execution import around_runs
from rag_pipeline.defs.platform.runs import ACTIVE, DATA_DIR_TAG, end_dead_runs
from rag_pipeline.lib.core.lease import Lease
from rag_pipeline.lib.core.storage import location


def busy_message(name: str, run_id: str, where: str = "") -> str:
    by = f"run {run_id} ({where})" if where else f"run {run_id}"
    return f"the data directory {name} is written by {by}; this run starts when it ends"


def wait_turn(
    instance: dg.DagsterInstance,
    name: str,
    elsewhere: Callable[[], list[str]] = list,
    say: Callable[[str], None] = print,
) -> None:
    """Wait while a run of the instance writes the data directory `name` (those whose process is
    gone are ended first), or `elsewhere` names what else still writes it, saying each once."""
    told: set[str] = set()
    while True:
        for line in end_dead_runs(instance):
            say(line)
        busy = instance.get_runs(dg.RunsFilter(tags={DATA_DIR_TAG: name}, statuses=ACTIVE), limit=1)
        lines = [busy_message(name, busy[0].run_id)] if busy else elsewhere()
        if not lines:
            return
        for line in set(lines) - told:
            say(f"waiting: {line}")
        told |= set(lines)
        time.sleep(1.0)


def gave_way(instance: dg.DagsterInstance, run: dg.DagsterRun, name: str) -> bool:
    """Whether `run`, created to write the data directory `name`, gives way to an active run created
    before it: it is deleted then (not a failed run in the history), and its caller waits its turn."""
    records = instance.get_run_records(dg.RunsFilter(tags={DATA_DIR_TAG: name}, statuses=ACTIVE))
    mine = instance.get_run_records(dg.RunsFilter(run_ids=[run.run_id]))
    if not mine or not any(r.storage_id < mine[0].storage_id for r in records):
        return False
    instance.delete_run(run.run_id)
    return True


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
