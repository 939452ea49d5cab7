"""Gold statuses, drift rows and refresh on a real git history of the conftest notes."""

import copy
import json

import git
import pandas as pd
import pyarrow as pa
import pytest
from conftest import NOTES, QUESTIONS, commit_files, make_notes_repo

from rag_pipeline.lib.questions import (
    DRIFT_COLUMNS,
    DRIFT_SCHEMA,
    QuestionsError,
    assess,
    gold_counts,
    gold_problems,
    note_versions,
    parse_questions,
    refresh,
    resolve_label_commits,
)

GLOB, EXCLUDE = "content/notes/**/index.md", ["_index.md"]
DEADLOCK = "content/notes/db/deadlock/index.md"
TCP = "content/notes/net/tcp-handshake/index.md"
KAFKA = "content/notes/queues/kafka/index.md"
OLD_SENTENCE = "中止された側には SQLSTATE 40P01 が返ります。"
NEW_SENTENCE = "中止された側には SQLSTATE 40P01 のエラーが返ります。"


def delete_files(repo: git.Repo, paths: list[str], message: str) -> str:
    repo.index.remove(paths, working_tree=True)
    actor = git.Actor("test", "test@example.invalid")
    return repo.index.commit(message, author=actor, committer=actor).hexsha


@pytest.fixture
def history(tmp_path):
    """c1: the notes; c2: deadlock's SQLSTATE sentence edited, kafka added; c3: tcp-handshake
    deleted and a line appended to deadlock."""
    repo = make_notes_repo(tmp_path / "notes", NOTES)
    c1 = repo.head.commit.hexsha
    edited = NOTES[DEADLOCK].replace(OLD_SENTENCE, NEW_SENTENCE)
    kafka = '---\ntitle: "Kafka"\n---\nA topic has 12 partitions by default here.\n'
    c2 = commit_files(repo, {DEADLOCK: edited, KAFKA: kafka}, "edit deadlock, add kafka")
    delete_files(repo, [TCP], "delete tcp-handshake")
    c3 = commit_files(repo, {DEADLOCK: edited + "再試行の回数は設定で変えられます。\n"}, "append to deadlock")
    return repo, c1, c2, c3


def labelled(items: list[dict], commit: str | None) -> list[dict]:
    return [item | {"commit": commit} if item.get("slug") and commit else dict(item) for item in items]


def run(repo, items, indexed):
    questions = parse_questions(items, "q.json")
    return assess(repo, questions, indexed, GLOB, EXCLUDE, "q.json")


def test_each_status_with_a_deleted_note(history):
    repo, c1, _, c3 = history
    statuses, drift = run(repo, labelled(QUESTIONS, c1), c3)
    assert {q: s.status for q, s in statuses.items()} == {
        "1": "stale",  # its sentence was edited
        "2": "ok",  # columnar-storage never changed
        "3": "stale",  # tcp-handshake was deleted
        "4": "carried",  # deadlock changed, both evidences still found once
        "5": "ok",  # unanswerable
    }
    assert gold_counts(statuses) == {"ok": 2, "carried": 1, "stale": 2, "invalid": 0}
    assert list(drift.columns) == DRIFT_COLUMNS
    rows = {(r.question_id, r.field): r for r in drift.itertuples(index=False)}
    assert set(rows) == {("1", "evidence"), ("3", "evidence"), ("4", "evidence"), ("4", "evidence2")}
    deleted = rows[("3", "evidence")]
    assert deleted.evidence_found == 0 and deleted.suggested_evidence is None
    assert pd.isna(deleted.suggestion_score)
    assert deleted.changed_in == [repo.head.commit.parents[0].hexsha]  # the deletion
    carried = rows[("4", "evidence2")]
    assert carried.evidence_status == "carried" and carried.evidence_found == 1
    assert carried.label_commit == c1 and carried.indexed_commit == c3
    assert pa.Table.from_pandas(drift, schema=DRIFT_SCHEMA, preserve_index=False).num_rows == 4


def test_changed_in_lists_the_commits_that_touched_the_note_newest_first(history):
    repo, c1, c2, c3 = history
    _, drift = run(repo, labelled(QUESTIONS, c1), c3)
    row = drift[drift["question_id"] == "1"].iloc[0]
    assert list(row["changed_in"]) == [c3, c2]


def test_the_edited_sentence_is_suggested_with_a_high_score(history):
    repo, c1, _, c3 = history
    _, drift = run(repo, labelled(QUESTIONS, c1), c3)
    row = drift[drift["question_id"] == "1"].iloc[0]
    assert row["evidence_found"] == 0
    assert row["suggested_evidence"] == "SQLSTATE 40P01 のエラーが返ります"
    assert row["suggestion_score"] >= 0.7
    assert row["suggested_section"] == "DBMS はデッドロックをどう終わらせるか"


def test_invalid_labels_against_their_own_version_and_without_a_commit(history):
    repo, c1, _, c3 = history
    items = [
        # the evidence of c2's edit, labelled against c1 where it does not occur
        {"id": 1, "q": "a", "slug": "deadlock", "evidence": "SQLSTATE 40P01 のエラー", "commit": c1},
        {"id": 2, "q": "b", "slug": "deadlock", "evidence": "no such words"},  # no commit, missing
        {"id": 3, "q": "c", "slug": "kafka", "evidence": "12 partitions", "commit": c1},  # no note at c1
        {"id": 4, "q": "d", "slug": "deadlock", "evidence": "最大 3 回まで再試行します"},  # no commit, found
    ]
    statuses, drift = run(repo, items, c3)
    assert [s.status for s in statuses.values()] == ["invalid", "invalid", "invalid", "ok"]
    problems = gold_problems(statuses)
    assert set(problems) == {"1", "2", "3"}
    assert "absent from note 'deadlock' at its label commit" in problems["1"]
    assert "note 'kafka' does not exist at its label commit" in problems["3"]
    assert set(drift["gold_status"]) == {"invalid"}


def test_an_indexed_commit_older_than_the_label_commit(history):
    repo, c1, c2, _ = history
    items = [
        {"id": 1, "q": "a", "slug": "kafka", "evidence": "12 partitions", "commit": c2},
        {
            "id": 2,
            "q": "b",
            "slug": "deadlock",
            "evidence": "SQLSTATE 40P01 のエラーが返ります",
            "commit": c2,
        },
        {"id": 3, "q": "c", "slug": "deadlock", "evidence": "最大 3 回まで再試行します", "commit": c2},
    ]
    statuses, drift = run(repo, items, c1)
    assert [s.status for s in statuses.values()] == ["stale", "stale", "carried"]
    kafka = drift[drift["question_id"] == "1"].iloc[0]
    assert list(kafka["changed_in"]) == [c2] and kafka["suggested_evidence"] is None  # not there yet
    back = drift[drift["question_id"] == "2"].iloc[0]
    assert back["suggested_evidence"] == "SQLSTATE 40P01 が返ります"


def test_unknown_and_abbreviated_label_commits(history):
    repo, c1, _, c3 = history
    items = [
        {"id": 7, "q": "a", "slug": "deadlock", "evidence": "最大 3 回まで再試行します", "commit": "0" * 12}
    ]
    with pytest.raises(
        QuestionsError, match=r"q\.json: question 7: label commit '000000000000' names no commit"
    ):
        run(repo, items, c3)
    items[0]["commit"] = c1[:7].upper()
    resolved = resolve_label_commits(repo, parse_questions(items, "q.json"), "q.json")
    assert resolved[0].commit == c1
    statuses, _ = run(repo, items, c3)
    assert statuses["7"].status == "carried" and statuses["7"].label_commit == c1


def test_a_label_commit_that_is_not_a_sha_is_rejected_when_parsed():
    with pytest.raises(QuestionsError, match="question 1: field 'commit' must be a commit sha"):
        parse_questions([{"id": 1, "q": "a", "slug": None, "commit": "HEAD"}], "q.json")


def test_multi_evidence_question_takes_its_worst_evidence(history):
    repo, c1, _, c3 = history
    item = {
        "id": 9,
        "q": "a",
        "slug": "columnar-storage",
        "section": "CSV と Parquet の比較",
        "evidence": "Parquet は 15.6 分の 1 の大きさでした",  # unchanged note: ok
        "slug2": "deadlock",
        "section2": "DBMS はデッドロックをどう終わらせるか",
        "evidence2": "SQLSTATE 40P01 が返ります",  # edited: stale
        "commit": c1,
    }
    statuses, drift = run(repo, [item], c3)
    assert statuses["9"].status == "stale"
    assert [e.status for e in statuses["9"].evidence] == ["ok", "stale"]
    assert drift[["field", "slug", "evidence_status"]].values.tolist() == [["evidence2", "deadlock", "stale"]]
    new, changes = refresh([item], drift, c3)
    assert new[0]["evidence"] == item["evidence"]
    assert new[0]["evidence2"] == "SQLSTATE 40P01 のエラーが返ります"
    assert new[0]["commit"] == c3 and new[0]["relabelled"] is True
    assert changes == [
        "question 9: evidence2 'SQLSTATE 40P01 が返ります' -> 'SQLSTATE 40P01 のエラーが返ります' (score "
        f"{drift['suggestion_score'].iloc[0]:.2f})"
    ]


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
    from rag_pipeline.gold import main

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
