"""Where and when each step of a run ran, from the run's event log; and how much of the lanes' step
time was spent side by side. Used by the Celery test and benchmarks/bench_executors.py."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from rag_pipeline.defs.platform.lanes import STAGES


@dataclass(frozen=True)
class Span:
    step: str
    worker: str  # the Celery worker's hostname (NAME@host); "" outside Celery
    start: float  # unix time of STEP_START
    end: float  # of STEP_SUCCESS or STEP_FAILURE

    @property
    def lane(self) -> bool:
        return self.step.startswith(tuple(f"{stage}_" for stage in STAGES))


def step_spans(instance: dg.DagsterInstance, run_id: str) -> list[Span]:
    """Every step that ran, with the worker dagster-celery names in its "Executing steps ... in
    celery worker" engine event."""
    worker: dict[str, str] = {}
    start: dict[str, float] = {}
    spans = []
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or event.step_key is None:
            continue
        kind = event.event_type
        if kind == dg.DagsterEventType.ENGINE_EVENT:
            metadata = event.engine_event_data.metadata or {}
            if "Celery worker" in metadata:
                worker[event.step_key] = metadata["Celery worker"].value
        elif kind == dg.DagsterEventType.STEP_START:
            start[event.step_key] = entry.timestamp
        elif kind in (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE):
            key = event.step_key
            spans.append(Span(key, worker.get(key, ""), start[key], entry.timestamp))
    return spans


def started_on(instance: dg.DagsterInstance, run_id: str) -> dict[str, str]:
    """The worker each step of the run was started on last (dagster-celery's engine event names it)."""
    found = {}
    for record in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT).records:
        metadata = record.event_log_entry.dagster_event.engine_event_data.metadata or {}
        if "Celery worker" in metadata:
            found[record.event_log_entry.step_key] = metadata["Celery worker"].value
    return found


def side_by_side(spans: list[Span]) -> float:
    """The share of the lane steps' time during which another lane step ran too (0: one at a time)."""
    lanes = [s for s in spans if s.lane]
    total = sum(s.end - s.start for s in lanes)
    shared = 0.0
    for span in lanes:
        others = sorted((o.start, o.end) for o in lanes if o is not span)
        reach = span.start  # the part of the span already counted
        for start, end in others:
            start, end = max(start, reach), min(end, span.end)
            if end > start:
                shared += end - start
                reach = end
    return shared / total if total else 0.0
