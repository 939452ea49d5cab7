"""Gold statuses and drift rows on a real git history (support/gold.py)."""

import pandas as pd
import pyarrow as pa
import pytest

from rag_pipeline.lib.questions import (
    DRIFT_COLUMNS,
    DRIFT_SCHEMA,
    QuestionsError,
    gold_counts,
    gold_problems,
    parse_questions,
    refresh,
    resolve_label_commits,
)
from rag_pipeline_tests.support.gold import (
    labelled,
    run,
)
from rag_pipeline_tests.support.repos import QUESTIONS


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
