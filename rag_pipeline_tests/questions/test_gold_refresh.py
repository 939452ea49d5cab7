"""`refresh` and `python -m rag_pipeline.gold` on a real git history (support/gold.py)."""

import copy
import json

import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.questions import (
    DRIFT_SCHEMA,
    assess,
    gold_counts,
    gold_problems,
    note_versions,
    parse_questions,
    refresh,
    resolve_label_commits,
)
from rag_pipeline_tests.support.gold import (
    DEADLOCK,
    EXCLUDE,
    GLOB,
    OLD_SENTENCE,
    labelled,
    run,
)
from rag_pipeline_tests.support.repos import NOTES, QUESTIONS, commit_files


def test_refresh_moves_carried_relabels_close_stale_and_leaves_the_rest(history):
    repo, c1, _, c3 = history
    items = labelled(QUESTIONS, c1)
    original = copy.deepcopy(items)
    statuses, drift = run(repo, items, c3)
    new, changes = refresh(items, drift, c3)
    assert items == original  # not mutated
    by_id = {item["id"]: item for item in new}
    assert by_id[1]["evidence"] == "SQLSTATE 40P01 のエラーが返ります"
    assert by_id[1]["commit"] == c3 and by_id[1]["relabelled"] is True
    assert by_id[1]["section"] == original[0]["section"]  # the suggestion lies in the same section
    assert by_id[2] == original[1]  # ok
    assert by_id[3] == original[2]  # its note is deleted: left stale
    assert by_id[4] == original[3] | {"commit": c3}  # carried
    assert "relabelled" not in by_id[4]
    assert by_id[5] == original[4]
    assert any(line.startswith("question 3: left stale: no suggestion") for line in changes)
    assert any(line.startswith("question 4: carried to") for line in changes)
    # the refreshed file, read again, is all ok at the indexed commit except the deleted note
    statuses, _ = run(repo, new, c3)
    assert gold_counts(statuses) == {"ok": 4, "carried": 0, "stale": 1, "invalid": 0}


def test_refresh_keeps_a_stale_question_below_the_threshold_or_with_a_broken_answer_pattern(history):
    repo, c1, _, c3 = history
    item = {"id": 1, "q": "a", "slug": "deadlock", "evidence": "SQLSTATE 40P01 が返ります", "commit": c1}
    _, drift = run(repo, [item], c3)
    new, changes = refresh([item], drift, c3, threshold=0.99)
    assert new == [item] and changes[0].startswith("question 1: left stale: best suggestion for evidence")
    # the answer changed with the edit: a relabel would keep a wrong answer_pattern
    edited = NOTES[DEADLOCK].replace(OLD_SENTENCE, "中止された側には SQLSTATE 40001 が返ります。")
    c4 = commit_files(repo, {DEADLOCK: edited}, "another code")
    patterned = item | {"answer_pattern": "40P01"}
    _, drift = run(repo, [patterned], c4)
    assert drift["suggestion_score"].iloc[0] >= 0.7
    new, changes = refresh([patterned], drift, c4)
    assert new == [patterned] and "answer_pattern '40P01' no longer matches" in changes[0]


def test_all_ok_gives_an_empty_drift_frame_with_the_schema_and_pin(history):
    repo, c1, _, _ = history
    statuses, drift = run(repo, QUESTIONS, c1)
    assert gold_counts(statuses)["ok"] == 5 and drift.empty
    assert pa.Table.from_pandas(drift, schema=DRIFT_SCHEMA, preserve_index=False).schema == DRIFT_SCHEMA
    new, changes = refresh(QUESTIONS, drift, c1, pin=True)
    assert [item.get("commit") for item in new] == [c1, c1, c1, c1, None]
    assert len(changes) == 4 and "commit" not in QUESTIONS[0]


def test_note_versions_reads_only_the_slugs_asked_for(history):
    repo, c1, _, _ = history
    versions = note_versions(repo.commit(c1), GLOB, EXCLUDE, {"deadlock"})
    assert list(versions) == ["deadlock"] and versions["deadlock"].path == DEADLOCK
    assert OLD_SENTENCE in versions["deadlock"].text and "```" not in versions["deadlock"].text


def test_cli_refresh_writes_a_copy(history, tmp_path, monkeypatch, capsys):
    from rag_pipeline.cli.gold import main

    repo, c1, _, c3 = history
    path = tmp_path / "questions.json"
    text = json.dumps(labelled(QUESTIONS, c1[:8]), ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    data = tmp_path / "data"
    (data / "notes").mkdir(parents=True)
    pd.DataFrame({"note": ["deadlock"], "commit": [c3]}).to_parquet(data / "notes" / "source_notes.parquet")
    monkeypatch.setenv("RAG_QUESTIONS", str(path))
    monkeypatch.setenv("RAG_NOTES_REPO", repo.working_tree_dir)
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    assert main(["refresh"]) == 0
    out = capsys.readouterr().out
    assert "5 questions at" in out and "2 ok, 1 carried, 2 stale, 0 invalid" in out
    assert path.read_text(encoding="utf-8") == text
    refreshed = json.loads((tmp_path / "questions.refreshed.json").read_text(encoding="utf-8"))
    assert refreshed[0]["relabelled"] is True and refreshed[3]["commit"] == c3
    assert main(["status", "--commit", c1]) == 0
    assert "5 ok, 0 carried" in capsys.readouterr().out
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "empty"))
    assert main(["status"]) == 2
    assert "no index yet" in capsys.readouterr().err


def test_refresh_reads_the_drift_frame_back_from_parquet(history, tmp_path):
    repo, c1, _, c3 = history
    items = labelled(QUESTIONS, c1)
    _, drift = run(repo, items, c3)
    path = tmp_path / "gold_drift.parquet"
    pa.parquet.write_table(pa.Table.from_pandas(drift, schema=DRIFT_SCHEMA, preserve_index=False), path)
    assert refresh(items, pd.read_parquet(path), c3) == refresh(items, drift, c3)


def test_questions_frame_carries_the_label_commit_and_usable_drops_stale(history):
    from rag_pipeline.lib.questions import questions_frame, questions_from_frame, usable

    repo, c1, _, c3 = history
    questions = resolve_label_commits(repo, parse_questions(labelled(QUESTIONS, c1[:10]), "q.json"), "q.json")
    statuses, _ = run(repo, labelled(QUESTIONS, c1), c3)
    texts = {slug: v.text for slug, v in note_versions(repo.commit(c3), GLOB, EXCLUDE).items()}
    frame = questions_frame(
        questions, texts, gold_problems(statuses), {q: s.status for q, s in statuses.items()}
    )
    assert frame["label_commit"].tolist()[:4] == [c1] * 4 and pd.isna(frame["label_commit"].iloc[4])
    assert frame["gold_status"].tolist() == ["stale", "ok", "stale", "carried", "ok"]
    assert usable(frame)["question_id"].tolist() == ["2", "4", "5"]
    assert [q.commit for q in questions_from_frame(frame)[0]] == [c1, c1, c1, c1, None]


def test_assess_takes_the_indexed_notes_from_a_cleaned_notes_frame(history):
    from rag_pipeline.lib.questions import current_versions

    repo, c1, _, c3 = history
    versions = note_versions(repo.commit(c3), GLOB, EXCLUDE)
    cleaned = pd.DataFrame(
        [{"note": s, "path": v.path, "source_version": v.blob, "text": v.text} for s, v in versions.items()]
    )
    questions = parse_questions(labelled(QUESTIONS, c1), "q.json")
    given = assess(repo, questions, c3, GLOB, EXCLUDE, "q.json", current=current_versions(cleaned))
    read = assess(repo, questions, c3, GLOB, EXCLUDE, "q.json")
    assert given[0] == read[0]
    pd.testing.assert_frame_equal(given[1], read[1])
