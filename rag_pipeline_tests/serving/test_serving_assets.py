"""The served LanceDB tables as Dagster assets: built, kept in step with the notes, evaluated."""

import json
import re

import dagster as dg
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rag_pipeline.definitions import build_assets, resources_from_env
from rag_pipeline.lib.chunking import load_strategies
from rag_pipeline.lib.questions import askers
from rag_pipeline.settings import Settings, SettingsError
from rag_pipeline_tests.support.repos import NOTES, QUESTIONS, commit_files, make_notes_repo
from rag_pipeline_tests.support.runs import materialization_metadata, run_all
from rag_pipeline_tests.support.served import open_table

TABLES = {"fixed_1000": "fixed-1000", "section_split": "section-split"}
ASSETS = build_assets(load_strategies(",".join(TABLES.values()), None))
SERVED = dg.AssetSelection.assets("serving_evaluation").upstream()
# the contract of reports/serving.parquet: what was measured, then on what
REPORT_COLUMNS = ["strategy", "index_type", "k", "recall_vs_exact", "underfilled", "latency_p50_ms"]
REPORT_COLUMNS += ["latency_p95_ms", "n_questions", "table_version", "embedding_version", "commit"]


def chunks_of(data, strategy: str) -> pd.DataFrame:
    return pd.read_parquet(data / "chunks" / f"{strategy}.parquet", columns=["chunk_id", "note"])


def served_ids(data, table: str) -> set[str]:
    rows = open_table(data / "lancedb", table).read(["chunk_id"])
    return set(rows["chunk_id"].to_pylist())


def ids(chunks: pd.DataFrame, notes: set[str]) -> set[str]:
    return set(chunks.loc[chunks["note"].isin(notes), "chunk_id"])


def test_tables_follow_the_chunks_through_an_edit_and_a_deletion(notes_repo, small_env, tmp_path):
    env, data = small_env | {"RAG_RETRIEVERS": "dense"}, tmp_path / "out"
    result = run_all(env, ASSETS, selection=SERVED)
    checks = {
        (c.asset_key.to_user_string(), c.check_name): c.passed for c in result.get_asset_check_evaluations()
    }
    assert all(checks.values()) and ("serving_evaluation", "recall_and_fill") in checks
    before = {}
    for table, strategy in TABLES.items():
        before[table] = chunks_of(data, strategy)
        assert served_ids(data, table) == set(before[table]["chunk_id"])
        meta = materialization_metadata(result, f"index_{table}")
        assert (meta["rows"], meta["rows_added"], meta["index_type"]) == (
            len(before[table]),
            meta["rows"],
            "exact",
        )
        assert meta["version"] == open_table(data / "lancedb", table).version and meta["disk_bytes"] > 0
        row = open_table(data / "lancedb", table).lance.search().limit(1).to_arrow().to_pylist()[0]
        assert row["access"] == [] and row["embedding_version"].startswith("hashing:")

    report = pq.read_table(data / "reports" / "serving.parquet")
    frame = report.to_pandas()
    assert list(frame.columns) == REPORT_COLUMNS
    assert len(frame) == len(TABLES) * 3  # exact search only, k = 1, 5, 10
    assert (frame["recall_vs_exact"] == 1.0).all() and (frame["underfilled"] == 0).all()
    assert (frame["n_questions"] == len(QUESTIONS)).all()
    assert report.schema.metadata[b"rag.commit"].decode() == notes_repo.head.commit.hexsha
    assert "| fixed-1000 | exact | 5 |" in materialization_metadata(result, "serving_evaluation")["serving"]

    first = notes_repo.head.commit.hexsha
    # one note edited, one deleted (with its question): their old rows go, the edited note's new ones come
    deadlock = "content/notes/db/deadlock/index.md"
    edited = NOTES[deadlock] + "\n### 監視\nロック待ちの時間はメトリクスで監視します。\n"
    edit = commit_files(notes_repo, {deadlock: edited}, "edit deadlock")
    notes_repo.index.remove(["content/notes/net/tcp-handshake/index.md"], working_tree=True)
    notes_repo.index.commit("remove tcp-handshake")
    kept = [q for q in QUESTIONS if q["slug"] != "tcp-handshake"]
    (tmp_path / "questions.json").write_text(json.dumps(kept, ensure_ascii=False), encoding="utf-8")
    result = run_all(env, ASSETS, selection=SERVED)
    assert all(c.passed for c in result.get_asset_check_evaluations())
    for table, strategy in TABLES.items():
        after = chunks_of(data, strategy)
        assert served_ids(data, table) == set(after["chunk_id"])
        meta = materialization_metadata(result, f"index_{table}")
        removed = ids(before[table], {"deadlock", "tcp-handshake"})
        added = ids(after, {"deadlock"})
        assert (meta["rows"], meta["rows_added"], meta["rows_removed"]) == (
            len(after),
            len(added),
            len(removed),
        )
        # a row's commit is the last commit that changed its note: the untouched note's rows stay
        assert meta["rows_updated"] == 0
        rows = open_table(data / "lancedb", table).read(["note", "commit"]).to_pandas()
        assert rows.groupby("note")["commit"].unique().map(list).to_dict() == {
            "columnar-storage": [first],
            "deadlock": [edit],
        }
    served = (data / "reports" / "serving.parquet").read_bytes()
    assert pq.read_table(data / "reports" / "serving.parquet").to_pandas()["n_questions"].eq(len(kept)).all()

    # the evaluation summary republishes reports/ as a set and carries serving.parquet over
    everything_else = dg.AssetSelection.all() - dg.AssetSelection.assets("serving_evaluation")
    assert run_all(env, ASSETS, selection=everything_else).success
    assert (data / "reports").is_symlink() and (data / "reports" / "evaluation_summary.parquet").exists()
    assert (data / "reports" / "serving.parquet").read_bytes() == served


def test_askers_read_everything_unless_the_questions_name_groups():
    assert askers(pd.DataFrame({"q": ["a", "b"]})) == [None, None]
    groups = pd.DataFrame({"q": ["a", "b", "c"], "groups": [["team-a"], None, []]})
    assert askers(groups) == [["team-a"], None, []]


def test_ann_min_rows_comes_from_the_environment():
    assert Settings.from_env({}).ann_min_rows == 5000
    resources = resources_from_env({"RAG_ANN_MIN_ROWS": "20000"})
    assert resources["serving"].ann().min_rows == 20000
    with pytest.raises(
        SettingsError,
        match=re.escape("RAG_ANN_MIN_ROWS='100' is not valid: expected an integer from 256 to 10**8"),
    ):
        Settings.from_env({"RAG_ANN_MIN_ROWS": "100"})


def test_a_table_past_ann_min_rows_is_served_through_an_ivf_pq_index(small_env, tmp_path):
    words = ["ロック", "索引", "列", "圧縮", "再試行", "handshake", "queue", "metric"]
    notes = {
        f"content/notes/t/n{i}/index.md": f'---\ntitle: "n{i}"\n---\n'
        + " ".join(f"{words[(i + j) % len(words)]}{i}-{j}" for j in range(300))
        for i in range(24)
    }
    repo = make_notes_repo(tmp_path / "many-notes", notes)
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{"id": i, "q": f"{w} {i}?", "slug": None} for i, w in enumerate(words)]))
    env = small_env | {"RAG_NOTES_REPO": repo.working_tree_dir, "RAG_QUESTIONS": str(questions)}
    env |= {"RAG_RETRIEVERS": "dense", "RAG_ANN_MIN_ROWS": "256"}
    result = run_all(env, build_assets(load_strategies("fixed-200", None)), selection=SERVED)
    assert all(c.passed for c in result.get_asset_check_evaluations())
    meta = materialization_metadata(result, "index_fixed_200")
    assert meta["rows"] >= 256 and meta["index_type"] == "ivf_pq" and meta["index_trained"]
    assert meta["index_params"]["min_rows"] == 256
    frame = pd.read_parquet(tmp_path / "out" / "reports" / "serving.parquet")
    assert sorted(set(frame["index_type"])) == ["exact", "ivf_pq"]
    assert (frame.loc[frame["k"] == 5, "recall_vs_exact"] >= 0.95).all()
