"""Each input an output depends on is in the lineage: a setting, the questions file, a deleted note, a
deleted output or a launchpad override makes exactly the assets it reaches stale, and one run of
the `make run` path brings them up to date."""

import json
import shutil
from pathlib import Path

import dagster as dg
import pandas as pd

from rag_pipeline.lib.serving import live_version
from rag_pipeline_tests.support.repos import NOTES, QUESTIONS, commit_files
from rag_pipeline_tests.support.runs import (
    done_and_reused,
    make_run,
    materialization_metadata,
    project_definitions,
)
from rag_pipeline_tests.support.served import open_table

LANE = ("chunks", "embeddings", "retrieval", "evaluation", "index")
BROKEN = "an output is missing or damaged"


def cold(env):
    instance = dg.DagsterInstance.ephemeral()
    _, result = make_run(project_definitions(env), instance)
    assert result.success
    return instance


def rerun(env, instance):
    found, result = make_run(project_definitions(env), instance)
    assert result is not None and result.success
    assert found.after == {}  # one run was enough
    done, _ = done_and_reused(result)
    return {k.to_user_string() for k in found.stale} | broken(found), done, result


def broken(found) -> set[str]:
    """The assets requested because their `outputs_intact` check failed (Dagster does not count a
    deleted output as unsynced)."""
    return {k.to_user_string() for k, why in found.requested.items() if BROKEN in why}


def test_a_retriever_change_reruns_retrieval_and_what_reads_it_and_embeds_nothing(small_env):
    env = small_env | {"RAG_STRATEGIES": "fixed-200,section", "RAG_RETRIEVERS": "dense,bm25"}
    instance = cold(env)
    stale, done, result = rerun(env | {"RAG_RETRIEVERS": "dense,rrf"}, instance)
    # and the costs, measured per configuration (re-priced by `budgets` once measured)
    assert stale == {
        "retrieval_fixed_200",
        "retrieval_section",
        "evaluation_summary",
        "answers",
        "judgments",
        "costs",
    }
    assert not {a for a in done if a.startswith(("chunks", "embeddings", "index"))}
    assert {
        "evaluation_fixed_200",
        "evaluation_section",
        "evaluation_summary",
        "answers",
        "judgments",
    } <= done
    assert materialization_metadata(result, "retrieval_section")["queries_embedded"] == 0
    summary = pd.read_parquet(f"{env['RAG_DATA_DIR']}/reports/evaluation_summary.parquet")
    assert set(summary["retriever"]) == {"dense", "rrf", "bm25"}  # rrf's inputs are reported too


def test_dropping_a_strategy_reruns_the_summaries_and_no_lane(small_env):
    env = small_env | {"RAG_STRATEGIES": "fixed-200,fixed-1000,section", "RAG_RETRIEVERS": "dense"}
    instance = cold(env)
    stale, done, _ = rerun(env | {"RAG_STRATEGIES": "fixed-1000,section"}, instance)
    assert stale == {"evaluation_summary", "serving_evaluation", "costs", "answers", "judgments", "release"}
    assert done == stale | {"budgets"}  # the costs measured again are priced again
    serving = pd.read_parquet(f"{env['RAG_DATA_DIR']}/reports/serving.parquet")
    assert set(serving["strategy"]) == {"fixed-1000", "section"}


def test_a_questions_edit_is_seen_and_new_groups_are_applied(notes_repo, small_env, questions_path):
    tcp, deadlock = "content/notes/net/tcp-handshake/index.md", "content/notes/db/deadlock/index.md"
    restricted = {
        tcp: NOTES[tcp].replace("---\n", "---\naccess: [sre]\n", 1),
        deadlock: NOTES[deadlock].replace("---\n", "---\naccess: [payments]\n", 1),
    }
    commit_files(notes_repo, restricted, "restrict two notes")
    env = small_env | {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense"}
    instance = cold(env)
    edited = [q | {"groups": ["payments"]} if q["id"] == 3 else q for q in QUESTIONS]
    questions_path.write_text(json.dumps(edited, ensure_ascii=False), encoding="utf-8")
    stale, done, _ = rerun(env, instance)
    assert stale == {"questions"}
    assert {"questions", "retrieval_section", "evaluation_section", "evaluation_summary", "answers"} <= done
    data = Path(env["RAG_DATA_DIR"])
    questions = pd.read_parquet(data / "notes" / "questions.parquet").set_index("question_id")
    assert questions.at["3", "category"] == "unauthorized"
    retrieved = pd.read_parquet(data / "retrieval" / "section.parquet")
    assert "tcp-handshake" not in set(retrieved.loc[retrieved["question_id"] == "3", "note"])
    summary = pd.read_parquet(data / "reports" / "evaluation_summary.parquet")
    assert set(summary["n_unauthorized"]) == {1}


def test_a_deleted_note_is_gone_everywhere_in_one_run(notes_repo, small_env):
    env = small_env | {"RAG_STRATEGIES": "fixed-200", "RAG_RETRIEVERS": "dense"}
    instance = cold(env)
    notes_repo.index.remove(["content/notes/storage/columnar-storage/index.md"], working_tree=True)
    notes_repo.index.commit("remove columnar-storage")
    questions = [q for q in QUESTIONS if q["slug"] != "columnar-storage"]
    Path(env["RAG_QUESTIONS"]).write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    rerun(env, instance)
    data = Path(env["RAG_DATA_DIR"])
    rows = open_table(data / "lancedb", "fixed_200").read(["note"]).to_pandas()
    assert "columnar-storage" not in set(rows["note"])
    assert "columnar-storage" not in set(pd.read_parquet(data / "retrieval" / "fixed-200.parquet")["note"])
    assert "15.6" not in " ".join(pd.read_parquet(data / "answers" / "answers.parquet")["answer"])


def test_a_deleted_or_damaged_output_makes_its_asset_stale(small_env):
    env = small_env | {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense"}
    instance = cold(env)
    data = small_env["RAG_DATA_DIR"]
    shutil.rmtree(f"{data}/lancedb/section.lance")
    stale, done, _ = rerun(env, instance)
    # the same rows again, so nothing is re-evaluated; the table lost its `live` tag: a new release
    assert stale == {"index_section", "release"} and "serving_evaluation" not in done
    table = open_table(f"{data}/lancedb", "section")
    assert table.count_rows() > 0
    live = json.loads(Path(data, "release", "current.json").read_text())["table_versions"]["section"]
    assert live_version(table) == live
    with open(f"{data}/retrieval/section.parquet", "r+b") as f:
        f.truncate(100)
    stale, _, _ = rerun(env, instance)
    assert stale == {"retrieval_section"}


def test_a_launchpad_override_leaves_its_assets_stale_for_the_next_plain_run(small_env):
    env = small_env | {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense"}
    defs = project_definitions(env)
    instance = cold(env)
    override = {"resources": {"retrieval": {"config": {"retrievers": ["bm25"]}}}}
    job = defs.resolve_job_def("index_and_evaluate")
    # without the release run's retriever there is nothing to release: only the gate fails
    overridden = job.execute_in_process(instance=instance, run_config=override, raise_on_error=False)
    assert [e.step_key for e in overridden.all_events if e.is_step_failure] == ["release"]
    found, _ = make_run(defs, instance)
    assert BROKEN in found.requested[dg.AssetKey("retrieval_section")]
    check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(dg.AssetKey("retrieval_section"), "outputs_intact")]
    )
    assert len(check) == 1
