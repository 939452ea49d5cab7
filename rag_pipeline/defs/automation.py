"""Re-index when the notes repository moves: a sensor on its branch and a nightly schedule.

Both compare the branch head with the last indexed commit and, when they differ, start a run
pinned to the new head that observes it and reads its notes. What that makes stale runs next,
one hop per sensor tick while no run of the job is going on, so only what the commit changed is
executed. The runs' tags record the commit range indexed.
"""

import hashlib

import dagster as dg

from rag_pipeline.defs.resources import DataStore, NotesRepository
from rag_pipeline.defs.staleness import HEAD, stale_assets

FROM_TAG = "rag/commit_from"
TO_TAG = "rag/commit_to"


def last_indexed_commit(instance: dg.DagsterInstance) -> str | None:
    """The commit recorded by the latest materialization of `source_notes`."""
    event = instance.get_latest_materialization_event(dg.AssetKey("source_notes"))
    if event is None or event.asset_materialization is None:
        return None
    commit = event.asset_materialization.metadata.get("commit")
    return str(commit.value) if commit is not None else None


ACTIVE = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def job_running(instance: dg.DagsterInstance, job_name: str) -> bool:
    return bool(instance.get_run_records(dg.RunsFilter(job_name=job_name, statuses=ACTIVE), limit=1))


def reindex_request(
    notes_repo: NotesRepository, head: str, last: str | None, run_key: str | None
) -> dg.RunRequest:
    """The first hop pinned to `head` (observe it, read its notes); run config replaces a resource's
    whole config, so all fields go."""
    config = {
        "repo": notes_repo.repo,
        "ref": head,
        "glob": notes_repo.glob,
        "exclude": list(notes_repo.exclude),
    }
    return dg.RunRequest(
        run_key=run_key,
        run_config={"resources": {"notes_repo": {"config": config}}},
        tags={FROM_TAG: last or "", TO_TAG: head},
        asset_selection=[HEAD, dg.AssetKey("source_notes")],
    )


def next_hop(context: dg.SensorEvaluationContext, head: str) -> dg.RunRequest | None:
    """A run of the assets stale now (None when nothing is), keyed so a tick never asks twice."""
    stale = stale_assets(context.repository_def.asset_graph, context.instance)
    if not stale:
        return None
    names = [k.to_user_string() for k in stale]
    digest = hashlib.sha256(" ".join([head, *names]).encode()).hexdigest()[:12]
    return dg.RunRequest(run_key=f"{head}:{digest}", asset_selection=stale, tags={TO_TAG: head})


def build_automation(
    job_name: str, *, branch: str, cron: str, timezone: str, enabled: bool
) -> tuple[dg.SensorDefinition, dg.ScheduleDefinition]:
    status = dg.DefaultSensorStatus.RUNNING if enabled else dg.DefaultSensorStatus.STOPPED

    @dg.sensor(
        job_name=job_name,
        minimum_interval_seconds=300,
        default_status=status,
        description=f"Starts a re-index when `{branch}` of the notes repository moves to a new commit, "
        "then runs what is stale, a hop per tick.",
    )
    def notes_commit_sensor(
        context: dg.SensorEvaluationContext, notes_repo: NotesRepository, store: DataStore
    ) -> dg.SensorResult:
        if job_running(context.instance, job_name):
            return dg.SensorResult(skip_reason=f"a run of {job_name} is going on", cursor=context.cursor)
        head = notes_repo.head(store, branch)
        last = context.cursor or last_indexed_commit(context.instance)
        if head != last:
            return dg.SensorResult(
                run_requests=[reindex_request(notes_repo, head, last, run_key=head)], cursor=head
            )
        hop = next_hop(context, head)
        if hop is None:
            return dg.SensorResult(skip_reason=f"{branch} is still at {head[:12]}, indexed", cursor=head)
        return dg.SensorResult(run_requests=[hop], cursor=head)

    @dg.schedule(
        job_name=job_name,
        cron_schedule=cron,
        execution_timezone=timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING if enabled else dg.DefaultScheduleStatus.STOPPED,
        description=f"At `{cron}` ({timezone}), re-indexes if `{branch}` has a commit not indexed yet.",
    )
    def nightly_reindex(context: dg.ScheduleEvaluationContext, notes_repo: NotesRepository, store: DataStore):
        head = notes_repo.head(store, branch)
        last = last_indexed_commit(context.instance)
        if head == last:
            return dg.SkipReason(f"{branch} is still at {head[:12]}, already indexed")
        return reindex_request(notes_repo, head, last, run_key=None)

    return notes_commit_sensor, nightly_reindex
