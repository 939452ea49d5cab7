"""The automation conditions, one named line each: when an asset is requested (`rebuild_condition`),
when a source is observed (`OBSERVE`). Every reason is a state Dagster reads from the instance, not
an event since the last evaluation, so the conditions keep no cursor: the sensor and `make run` ask
the same question and get the same answer, and a failed or killed run leaves its assets requested
until a run builds them; the sensor waits RAG_RETRY_AFTER before it tries a failing asset again
(`RetryLater`), a new input at once."""

import datetime
import time
from collections.abc import Iterable

import dagster as dg

from rag_pipeline.defs.platform.internals.reads import stale_categories

OUTPUTS_CHECK = "outputs_intact"
OBSERVE_CRON = "* * * * *"  # a new commit or questions edit is seen within a minute
A = dg.AutomationCondition
REASONS = ("missing", "code or settings changed", "a parent was updated", "an output is missing or damaged")
ENDED_BADLY = (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


class Unsynced(dg.AutomationCondition):
    """What the UI shows as unsynced: the asset's latest materialization was made by another code
    version (`CODE`) or from another data version of a parent (`DATA`) than the current ones, as
    Dagster's stale status reads it from the recorded provenance."""

    def __init__(self, category: str, label: str):
        self.category, self.label = category, label

    @property
    def name(self) -> str:
        return f"unsynced_{self.category.lower()}"

    def get_label(self) -> str:
        return self.label

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        held = self.category in stale_categories(context)
        return dg.AutomationResult(context, context.candidate_subset if held else context.get_empty_subset())


class RetryLater(dg.AutomationCondition):
    """The asset's latest run failed, or died, less than `delays` ago (the first delay after one
    failure, the second after two in a row, ...), and no parent has been updated since: a failing
    step is not requested every tick. Its metadata in the UI says when the next try is due."""

    def __init__(self, delays: tuple[float, ...]):
        self.delays = tuple(delays)

    @property
    def name(self) -> str:
        return "retry_later"

    def get_label(self) -> str:
        minutes = ", ".join(f"{d / 60:g}" for d in self.delays)
        return f"a failed run is retried after {minutes} min (at once on a new input)"

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        if not self.delays or context.candidate_subset.is_empty:  # `make run`, or nothing to hold back
            return dg.AutomationResult(context, context.get_empty_subset())
        due = failing_since(context.asset_graph_view.instance, context.asset_graph, context.key)
        if due is None:
            return dg.AutomationResult(context, context.get_empty_subset())
        ended, failures = due
        wait = self.delays[min(failures, len(self.delays)) - 1]
        held = time.time() < ended + wait
        next_try = datetime.datetime.fromtimestamp(ended + wait, datetime.timezone.utc)
        return dg.AutomationResult(
            context,
            context.candidate_subset if held else context.get_empty_subset(),
            metadata={"failures": failures, "next_try": next_try.isoformat(timespec="seconds")},
        )


def failing_since(instance: dg.DagsterInstance, graph, key: dg.AssetKey) -> tuple[float, int] | None:
    """When the asset's latest run ended without materializing it, and how many runs in a row did so
    since it or a parent was last updated; None when its latest run built it (or is running)."""
    (record,) = instance.get_asset_records([key]) or [None]
    entry = record.asset_entry if record else None
    if entry is None or entry.last_run_id is None:
        return None
    last = instance.get_run_record_by_id(entry.last_run_id)
    made = entry.last_materialization_record
    if last is None or last.dagster_run.status not in ENDED_BADLY:
        return None
    if made is not None and made.run_id == last.dagster_run.run_id:
        return None
    ended = last.end_time or last.update_timestamp.timestamp()
    updates = [made.timestamp] if made else []
    for parent in instance.get_asset_records(list(graph.get(key).parent_keys)):
        found = parent.asset_entry.last_materialization_record or parent.asset_entry.last_observation_record
        updates += [found.timestamp] if found else []
    since = max(updates, default=0.0)
    if since >= ended:  # a new input since the failure
        return None
    after = datetime.datetime.fromtimestamp(since, datetime.timezone.utc)
    runs = instance.get_run_records(dg.RunsFilter(statuses=list(ENDED_BADLY), updated_after=after))
    failures = [
        r
        for r in runs
        if (r.end_time or 0) > since
        and (r.dagster_run.asset_selection is None or key in r.dagster_run.asset_selection)
    ]
    return ended, max(1, len(failures))


def rebuild_condition(key: dg.AssetKey, retry_after: tuple[float, ...]) -> dg.AutomationCondition:
    """Missing, unsynced, or broken outputs, unless a failure waits for its retry; or a requested
    parent; not while anything it reads is being written."""
    broken = A.any_checks_match(A.check_failed()).allow(
        dg.AssetSelection.checks(dg.AssetCheckKey(key, OUTPUTS_CHECK))
    )
    unsynced = Unsynced("CODE", REASONS[1]) | Unsynced("DATA", REASONS[2])
    parent_requested = A.any_deps_match(A.will_be_requested()).with_label(REASONS[2])
    own = A.missing().with_label(REASONS[0]) | broken.with_label(REASONS[3]) | unsynced
    # a requested parent is a new input: its children go with it whatever they failed before
    wanted = (own & ~RetryLater(retry_after)) | parent_requested
    return (wanted & ~A.any_deps_in_progress() & ~A.in_progress()).with_label("rebuild")


OBSERVE = A.cron_tick_passed(OBSERVE_CRON).with_label("observed every minute")


def with_conditions(assets: Iterable, retry_after: tuple[float, ...]) -> list:
    """`assets` with the rebuild condition on every materializable asset."""
    observable = [a for a in assets if getattr(a, "is_observable", False)]
    return (
        list(
            dg.map_asset_specs(
                lambda spec: spec.replace_attributes(
                    automation_condition=rebuild_condition(spec.key, retry_after)
                ),
                [a for a in assets if a not in observable],
            )
        )
        + observable
    )
