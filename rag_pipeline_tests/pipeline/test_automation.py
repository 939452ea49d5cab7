"""Dagster's declarative automation decides what runs: every asset has a condition, `make run` runs
exactly what the conditions request, and that is what Dagster reports as unsynced and all it reaches.
Real git repositories and real Dagster instances (sqlite on disk where a test needs one)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.defs.platform import assets
from rag_pipeline.defs.platform.conditions import OUTPUTS_CHECK
from rag_pipeline.defs.platform.runs import DATA_DIR_TAG, data_dir_name
from rag_pipeline_tests.support.repos import NOTES, QUESTIONS, commit_files
from rag_pipeline_tests.support.runs import done_and_reused, make_run, project_definitions
from rag_pipeline_tests.support.served import open_table

TCP = "content/notes/net/tcp-handshake/index.md"


def downstream(defs: dg.Definitions, keys) -> set[str]:
    """`keys` and every asset below them."""
    graph = defs.resolve_asset_graph()
    found, todo = set(), list(keys)
    while todo:
        key = todo.pop()
        if key not in found:
            found.add(key)
            todo += graph.get(key).child_keys
    return {k.to_user_string() for k in found}


def new_code(monkeypatch, name: str) -> None:
    """As if the code `name` runs had changed: its fingerprint (its code version) is another."""
    original = assets.fingerprint

    def changed(objects, **knobs):
        return original(objects, **knobs) + (
            "-changed" if any(getattr(o, "__name__", "") == name for o in objects) else ""
        )

    monkeypatch.setattr(assets, "fingerprint", changed)


def test_every_asset_has_an_automation_condition_and_one_sensor_evaluates_them(small_env):
    defs = project_definitions(small_env)
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        assert graph.get(key).automation_condition is not None, key
    # the checks an asset runs itself run with it; `outputs_intact` runs on its own, nightly
    own = [k for k in graph.asset_check_keys if k.name == OUTPUTS_CHECK]
    assert {k.asset_key for k in own} == set(graph.materializable_asset_keys)
    assert all(graph.get(k).automation_condition is not None for k in own)
    sensors = [defs.resolve_sensor_def(s.name) for s in defs.sensors]
    assert [type(s) for s in sensors] == [dg.AutomationConditionSensorDefinition]
    assert not defs.schedules
    name = data_dir_name(small_env["RAG_DATA_DIR"])
    assert defs.resolve_job_def("index_and_evaluate").tags[DATA_DIR_TAG] == name


@pytest.mark.parametrize("change", ["notes", "questions", "settings", "code"])
def test_what_make_run_runs_is_what_dagster_reports_unsynced_and_all_it_reaches(
    change, notes_repo, small_env, questions_path, monkeypatch
):
    env = small_env | {"RAG_STRATEGIES": "fixed-200,section", "RAG_RETRIEVERS": "dense"}
    instance = dg.DagsterInstance.ephemeral()
    found, cold = make_run(project_definitions(env), instance)
    assert cold.success and set(found.stale.values()) == {"never materialized"}
    assert found.after == {}
    assert make_run(project_definitions(env), instance) == (found.__class__({}, {}), None)

    if change == "notes":
        commit_files(notes_repo, {TCP: NOTES[TCP] + "\n### Teardown\nFIN closes each direction.\n"}, "edit")
    elif change == "questions":
        questions_path.write_text(json.dumps(QUESTIONS[:4], ensure_ascii=False), encoding="utf-8")
    elif change == "settings":
        env = env | {"RAG_RETRIEVERS": "dense,bm25"}
    else:
        new_code(monkeypatch, "evaluation_summary")
    defs = project_definitions(env)
    found, result = make_run(defs, instance)
    assert found.stale, change  # Dagster sees the change
    assert {k.to_user_string() for k in found.requested} == downstream(defs, found.stale)
    assert result.success
    done, reused = done_and_reused(result)
    assert done | reused == downstream(defs, found.stale)
    # one run did it all: nothing unsynced, nothing requested
    assert found.after == {}


@pytest.mark.parametrize("change", ["notes", "code"])
def test_a_change_after_a_run_make_run_did_not_evaluate_is_still_run(
    change, notes_repo, small_env, monkeypatch
):
    """A run made outside `make run` (the UI's *Materialize all*; the sensor's, on its own cursor),
    then a change, with no evaluation between them: on that tick Dagster's edge-triggered
    conditions saw the asset updated and its parent updated at once, and the reset won."""
    env = small_env | {"RAG_STRATEGIES": "fixed-200", "RAG_RETRIEVERS": "dense"}
    instance = dg.DagsterInstance.ephemeral()
    defs = project_definitions(env)
    assert make_run(defs, instance)[1].success
    keys = list(defs.resolve_asset_graph().materializable_asset_keys)
    assert (
        defs.resolve_job_def("index_and_evaluate")
        .execute_in_process(instance=instance, asset_selection=keys)
        .success
    )
    if change == "notes":
        commit_files(notes_repo, {TCP: NOTES[TCP] + "\n### Teardown\nFIN closes each direction.\n"}, "edit")
    else:
        new_code(monkeypatch, "evaluation_summary")
    defs = project_definitions(env)
    found, result = make_run(defs, instance)
    assert found.stale, change
    assert {k.to_user_string() for k in found.requested} == downstream(defs, found.stale)
    assert result.success and found.after == {}
    assert make_run(defs, instance) == (found.__class__({}, {}), None)


def test_a_broken_output_fails_its_check_and_its_asset_runs_again(small_env):
    env = small_env | {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense"}
    defs, instance = project_definitions(env), dg.DagsterInstance.ephemeral()
    assert make_run(defs, instance)[1].success
    data = Path(env["RAG_DATA_DIR"])
    table = open_table(data / "lancedb", "section")
    table.lance.add(table.lance.to_arrow().slice(0, 1))  # a chunk_id twice, as two writers once left it
    with open(data / "retrieval" / "section.parquet", "r+b") as f:
        f.truncate(100)
    found, result = make_run(defs, instance)
    assert found.requested[dg.AssetKey("index_section")] == ["an output is missing or damaged"]
    assert found.requested[dg.AssetKey("retrieval_section")] == ["an output is missing or damaged"]
    assert result.success
    ids = open_table(data / "lancedb", "section").read(["chunk_id"]).to_pandas()
    assert not ids["chunk_id"].duplicated().any()
    assert found.after == {}


def test_an_edited_labels_file_is_a_change_of_settings_and_no_damage(small_env, tmp_path):
    labels = tmp_path / "labels.json"
    labels.write_text("[]")
    env = small_env | {
        "RAG_STRATEGIES": "section",
        "RAG_RETRIEVERS": "dense",
        "RAG_JUDGE_LABELS": str(labels),
    }
    instance = dg.DagsterInstance.ephemeral()
    assert make_run(project_definitions(env), instance)[1].success
    labels.write_text("[\n]\n")  # other bytes: the judge's settings digest changes
    found, result = make_run(project_definitions(env), instance)
    assert found.requested[dg.AssetKey("judgments")] == ["code or settings changed"]
    assert result.success and found.after == {}


def test_a_new_data_directory_with_the_same_instance_is_built_whole(small_env, tmp_path):
    env = small_env | {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense"}
    instance = dg.DagsterInstance.ephemeral()
    assert make_run(project_definitions(env), instance)[1].success
    moved = env | {"RAG_DATA_DIR": str(tmp_path / "elsewhere")}
    defs = project_definitions(moved)
    found, result = make_run(defs, instance)
    assert {k.to_user_string() for k in found.requested} == {
        k.to_user_string() for k in defs.resolve_asset_graph().materializable_asset_keys
    }
    assert result.success
    assert (tmp_path / "elsewhere" / "reports" / "evaluation_summary.parquet").exists()
    assert make_run(defs, instance)[1] is None


def test_the_checks_run_nightly_and_the_sources_every_minute(small_env):
    defs = project_definitions(small_env | {"RAG_REINDEX_CRON": "30 2 * * *"})
    graph = defs.resolve_asset_graph()
    check = graph.get(dg.AssetCheckKey(dg.AssetKey("answers"), OUTPUTS_CHECK))
    assert "30 2 * * *" in str(check.automation_condition.get_label())
    source = graph.get(dg.AssetKey("notes_head"))
    assert "every minute" in str(source.automation_condition.get_label())
    shutil.rmtree(small_env["RAG_DATA_DIR"], ignore_errors=True)


@pytest.mark.slow
def test_make_run_needs_no_daemon_and_no_dagster_yaml(small_env, tmp_path):
    """A fresh DAGSTER_HOME (as `make holdout` has on a fresh clone): the run is executed, not queued."""
    home = tmp_path / "home"
    home.mkdir()
    env = os.environ | small_env | {"DAGSTER_HOME": str(home), "RAG_STRATEGIES": "section"}
    env |= {"RAG_RETRIEVERS": "dense"}
    runner = [sys.executable, "-m", "rag_pipeline.run"]
    first = subprocess.run(runner, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-2000:]
    assert not (home / "dagster.yaml").exists()
    # as `make run`: the report follows, printed by the same process
    again = subprocess.run([*runner, "--report"], env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and "nothing is stale" in again.stdout
    assert again.stdout.rstrip().splitlines()[-1].startswith("Verdict: ")


@pytest.mark.slow
def test_a_commit_made_during_make_runs_run_is_built_by_a_second_run(notes_repo, small_env, tmp_path):
    """After a run, `make run` looks at the sources again: a commit made meanwhile is run at once,
    and with none it stops after one run."""
    home = tmp_path / "home"
    home.mkdir()
    env = os.environ | small_env | {"DAGSTER_HOME": str(home), "RAG_STRATEGIES": "section"}
    env |= {"RAG_RETRIEVERS": "dense"}
    runner = [sys.executable, "-m", "rag_pipeline.run"]
    with subprocess.Popen(runner, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        first = proc.stdout.readline()  # the plan: printed after the head was observed, before the run
        commit_files(notes_repo, {TCP: NOTES[TCP] + "\nSYN cookies, added while the run ran.\n"}, "edit")
        out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-2000:]
    head = notes_repo.head.commit.hexsha[:12]
    plans = [line for line in [first, *out.splitlines()] if line.startswith("stale at ")]
    assert len(plans) == 2 and plans[1].startswith(f"stale at {head}: "), [first, out]
    assert out.count(": success") == 2 and "a parent was updated" in plans[1]

    again = subprocess.run(runner, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and again.stdout.splitlines() == [
        f"nothing is stale at {head}: every asset is fresh"
    ]
