"""Re-index when the notes repository moves: a sensor on its branch and a nightly schedule.

Both compare the branch head with the last indexed commit and, when they differ, start the
whole job pinned to the new head; unchanged notes, chunks and vectors are reused inside the
assets, so such a run redoes only what the new commit changed. The run's tags record the
commit range it indexed.
"""

import dagster as dg

from rag_pipeline.defs.resources import DataStore, NotesRepository

FROM_TAG = "rag/commit_from"
TO_TAG = "rag/commit_to"


def last_indexed_commit(instance: dg.DagsterInstance) -> str | None:
    """The commit recorded by the latest materialization of `source_notes`."""
    event = instance.get_latest_materialization_event(dg.AssetKey("source_notes"))
    if event is None or event.asset_materialization is None:
        return None
    commit = event.asset_materialization.metadata.get("commit")
    return str(commit.value) if commit is not None else None


def reindex_request(
    notes_repo: NotesRepository, head: str, last: str | None, run_key: str | None
) -> dg.RunRequest:
    """The whole job pinned to `head`; run config replaces a resource's whole config, so all fields go."""
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
    )


def build_automation(
    job_name: str, *, branch: str, cron: str, timezone: str, enabled: bool
) -> tuple[dg.SensorDefinition, dg.ScheduleDefinition]:
    status = dg.DefaultSensorStatus.RUNNING if enabled else dg.DefaultSensorStatus.STOPPED

    @dg.sensor(
        job_name=job_name,
        minimum_interval_seconds=300,
        default_status=status,
        description=f"Starts a re-index when `{branch}` of the notes repository moves to a new commit.",
    )
    def notes_commit_sensor(
        context: dg.SensorEvaluationContext, notes_repo: NotesRepository, store: DataStore
    ) -> dg.SensorResult:
        head = notes_repo.head(store, branch)
        last = context.cursor or last_indexed_commit(context.instance)
        if head == last:
            return dg.SensorResult(
                skip_reason=f"{branch} is still at {head[:12]}, already indexed", cursor=head
            )
        return dg.SensorResult(
            run_requests=[reindex_request(notes_repo, head, last, run_key=head)], cursor=head
        )

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
