"""The commit sensor and the nightly schedule against a real git repository."""

import dagster as dg

from rag_pipeline.definitions import assets, index_and_evaluate
from rag_pipeline.defs.automation import FROM_TAG, TO_TAG, build_automation, last_indexed_commit
from rag_pipeline.defs.resources import resources_from_env
from rag_pipeline_tests.conftest import commit_files


def setup(env):
    sensor, schedule = build_automation(
        "index_and_evaluate", branch="main", cron="0 3 * * *", timezone="Europe/Paris", enabled=False
    )
    return resources_from_env(env | {"RAG_RETRIEVERS": "dense"}), sensor, schedule


def tick(definition, **kwargs):
    """Evaluate a sensor or schedule once, as the daemon would."""
    is_sensor = isinstance(definition, dg.SensorDefinition)
    build = dg.build_sensor_context if is_sensor else dg.build_schedule_context
    with build(**kwargs) as context:
        return definition(context)


def test_sensor_requests_a_new_commit_then_what_is_stale_a_hop_a_tick(notes_repo, small_env):
    resources, sensor, _ = setup(small_env)
    defs = dg.Definitions(assets=assets, jobs=[index_and_evaluate], resources=resources, sensors=[sensor])
    job = defs.resolve_job_def("index_and_evaluate")
    instance = dg.DagsterInstance.ephemeral()
    first = notes_repo.head.commit.hexsha

    result = tick(sensor, instance=instance, resources=resources, definitions=defs)
    assert [r.tags for r in result.run_requests] == [{FROM_TAG: "", TO_TAG: first}]
    request = result.run_requests[0]
    config = request.run_config["resources"]["notes_repo"]["config"]
    assert config["ref"] == first and config["repo"] == notes_repo.working_tree_dir
    assert result.cursor == first
    assert [k.to_user_string() for k in request.asset_selection] == ["notes_head", "source_notes"]

    hops = 0
    while request is not None:
        run = job.execute_in_process(
            instance=instance,
            asset_selection=request.asset_selection,
            run_config=request.run_config,
            tags=request.tags,
        )
        assert run.success
        hops += 1
        result = tick(sensor, instance=instance, resources=resources, definitions=defs, cursor=first)
        request = result.run_requests[0] if result.run_requests else None
    assert hops == 2 and "indexed" in str(result.skip_reason)

    second = commit_files(
        notes_repo, {"content/notes/db/deadlock/index.md": "---\ntitle: D\n---\n更新\n"}, "edit"
    )
    result = tick(sensor, instance=instance, resources=resources, definitions=defs, cursor=first)
    assert [r.tags for r in result.run_requests] == [{FROM_TAG: first, TO_TAG: second}]
    assert result.run_requests[0].run_key == second and result.cursor == second


def test_requested_run_indexes_that_commit_and_the_schedule_then_skips(notes_repo, small_env):
    resources, sensor, schedule = setup(small_env)
    with dg.instance_for_test() as instance:
        run_schedule_story(notes_repo, resources, sensor, schedule, instance)


def run_schedule_story(notes_repo, resources, sensor, schedule, instance):
    assert schedule.execution_timezone == "Europe/Paris"
    request = tick(schedule, instance=instance, resources=resources)
    head = notes_repo.head.commit.hexsha
    assert isinstance(request, dg.RunRequest) and request.tags[TO_TAG] == head

    # the run the request describes pins the ref and records the commit range
    commit_files(
        notes_repo,
        {
            "content/notes/net/tcp-handshake/index.md": "---\ntitle: T\n---\nTo learn that the other received its initial sequence number.\n"
        },
        "later",
    )
    job_defs = dg.Definitions(assets=assets, jobs=[index_and_evaluate], resources=resources)
    job = job_defs.resolve_job_def("index_and_evaluate")
    run = job.execute_in_process(run_config=request.run_config, tags=request.tags, instance=instance)
    assert run.success and run.dagster_run.tags[TO_TAG] == head
    assert last_indexed_commit(instance) == head  # the pinned commit, not the newer branch head

    later = notes_repo.head.commit.hexsha
    request = tick(schedule, instance=instance, resources=resources)
    assert isinstance(request, dg.RunRequest) and request.tags == {FROM_TAG: head, TO_TAG: later}
    # a sensor with no cursor starts from the last indexed commit too
    result = tick(sensor, instance=instance, resources=resources, definitions=job_defs)
    assert [r.tags for r in result.run_requests] == [{FROM_TAG: head, TO_TAG: later}]
    # once that commit is indexed, the nightly check skips
    job.execute_in_process(run_config=request.run_config, tags=request.tags, instance=instance)
    assert isinstance(tick(schedule, instance=instance, resources=resources), dg.SkipReason)
