"""The commit sensor and the nightly schedule against a real git repository and a real instance."""

import json

import dagster as dg
import pandas as pd

from rag_pipeline.definitions import JOB, build_assets, index_and_evaluate, resources_from_env
from rag_pipeline.defs.automation import build_automation
from rag_pipeline.defs.planner import FROM_TAG, TO_TAG, execute, last_indexed_commit
from rag_pipeline.lib.chunking import load_strategies
from rag_pipeline_tests.support.repos import NOTES, QUESTIONS, commit_files
from rag_pipeline_tests.support.runs import done_and_reused


def setup(env):
    env = env | {"RAG_RETRIEVERS": "dense", "RAG_STRATEGIES": "fixed-200,section"}
    resources = resources_from_env(env)
    sensor, schedule = build_automation(
        JOB, branch="main", cron="0 3 * * *", timezone="Europe/Paris", enabled=False
    )
    assets = build_assets(load_strategies(env["RAG_STRATEGIES"], None), resources)
    defs = dg.Definitions(
        assets=assets, jobs=[index_and_evaluate], resources=resources, sensors=[sensor], schedules=[schedule]
    )
    return defs, sensor, schedule


def tick(definition, defs, instance, **kwargs):
    """Evaluate a sensor or schedule once, as the daemon would."""
    is_sensor = isinstance(definition, dg.SensorDefinition)
    build = dg.build_sensor_context if is_sensor else dg.build_schedule_context
    repository = defs.get_repository_def()
    with build(instance=instance, resources=defs.resources, repository_def=repository, **kwargs) as context:
        result = definition(context)
    requests = result.run_requests if isinstance(result, dg.SensorResult) else result
    if isinstance(requests, dg.SkipReason) or requests is None:
        return requests
    if isinstance(requests, dg.RunRequest):
        return requests
    return requests[0] if requests else None


def test_a_tick_brings_everything_up_to_date_in_one_run(notes_repo, small_env, tmp_path):
    defs, sensor, _ = setup(small_env)
    with dg.instance_for_test() as instance:
        first = notes_repo.head.commit.hexsha
        request = tick(sensor, defs, instance)
        assert request.tags == {FROM_TAG: "", TO_TAG: first}
        assert request.run_config["resources"]["notes_repo"]["config"]["ref"] == first
        names = [k.to_user_string() for k in request.asset_selection]
        assert names[:2] == ["notes_head", "questions_file"] and "evaluation_summary" in names
        assert execute(defs, instance, request, JOB).success
        assert isinstance(tick(sensor, defs, instance), dg.SkipReason)  # one run did it all

        # a note edit and a questions edit together: the next tick's one run takes both
        edited = (
            NOTES["content/notes/net/tcp-handshake/index.md"] + "\n### Teardown\nFIN closes each direction.\n"
        )
        second = commit_files(notes_repo, {"content/notes/net/tcp-handshake/index.md": edited}, "edit")
        questions = tmp_path / "questions.json"
        questions.write_text(json.dumps(QUESTIONS[:4], ensure_ascii=False), encoding="utf-8")
        request = tick(sensor, defs, instance)
        assert request.tags == {FROM_TAG: first, TO_TAG: second}
        result = execute(defs, instance, request, JOB)
        done, _ = done_and_reused(result)
        assert {"source_notes", "questions", "evaluation_summary", "answers"} <= done
        assert isinstance(tick(sensor, defs, instance), dg.SkipReason)
        summary = pd.read_parquet(tmp_path / "out" / "reports" / "evaluation_summary.parquet")
        assert set(summary["commit"]) == {second} and set(summary["n_unanswerable"]) == {0}


def test_a_commit_during_a_run_waits_for_the_next_tick(notes_repo, small_env):
    defs, sensor, _ = setup(small_env)
    with dg.instance_for_test() as instance:
        request = tick(sensor, defs, instance)
        running = instance.create_run_for_job(defs.resolve_job_def(JOB), run_config=request.run_config)
        assert "is going on" in str(tick(sensor, defs, instance).skip_message)
        instance.report_run_canceled(running)
        assert tick(sensor, defs, instance).run_key == request.run_key  # the same plan, asked once


def test_the_nightly_schedule_alone_completes_the_reindex(notes_repo, small_env):
    defs, _, schedule = setup(small_env)
    with dg.instance_for_test() as instance:
        assert schedule.execution_timezone == "Europe/Paris"
        request = tick(schedule, defs, instance)
        head = notes_repo.head.commit.hexsha
        # a commit after the tick is not what the requested run indexes: it is pinned to the head seen
        commit_files(
            notes_repo, {"content/notes/net/extra/index.md": "---\ntitle: X\n---\nExtra.\n"}, "later"
        )
        assert execute(defs, instance, request, JOB).success
        assert last_indexed_commit(instance) == head
        later = notes_repo.head.commit.hexsha
        request = tick(schedule, defs, instance)
        assert request.tags == {FROM_TAG: head, TO_TAG: later}
        assert execute(defs, instance, request, JOB).success
        assert isinstance(tick(schedule, defs, instance), dg.SkipReason)


def test_a_commit_that_breaks_a_labelled_evidence_is_indexed_and_reported_stale(
    notes_repo, small_env, tmp_path
):
    head = notes_repo.head.commit.hexsha
    labelled = [q | {"commit": head[:10]} if q["slug"] else q for q in QUESTIONS]
    (tmp_path / "questions.json").write_text(json.dumps(labelled, ensure_ascii=False), encoding="utf-8")
    defs, sensor, _ = setup(small_env)
    with dg.instance_for_test() as instance:
        assert execute(defs, instance, tick(sensor, defs, instance), JOB).success
        deadlock = "content/notes/db/deadlock/index.md"
        broken = NOTES[deadlock].replace("SQLSTATE 40P01 が返ります", "エラーコード 40P01 が返されます")
        commit_files(notes_repo, {deadlock: broken}, "reword the deadlock note")
        result = execute(defs, instance, tick(sensor, defs, instance), JOB)
        assert result.success  # a stale label never fails the run
        drift = pd.read_parquet(tmp_path / "out" / "reports" / "gold_drift.parquet")
        status = drift.groupby("question_id")["gold_status"].first().to_dict()
        assert status == {"1": "stale", "4": "carried"}  # 4's evidence is elsewhere in the note
        assert "40P01" in drift.loc[drift["question_id"] == "1", "suggested_evidence"].iloc[0]
        summary = pd.read_parquet(tmp_path / "out" / "reports" / "evaluation_summary.parquet")
        assert set(summary["n_stale_gold"]) == {1} and set(summary["n_questions"]) == {3}
