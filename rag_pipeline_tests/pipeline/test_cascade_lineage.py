"""A commit that changes only a section's `cascade` rebuilds the notes below it, whose files did not
change: their chunks and served rows carry the new groups (nothing is embedded again), the
incremental build equals a fresh one, and `ask` for a public asker shows none of them."""

from pathlib import Path

import dagster as dg
import pandas as pd

from rag_pipeline_tests.support.repos import commit_files
from rag_pipeline_tests.support.runs import asked, make_run, materialization_metadata, project_definitions
from rag_pipeline_tests.support.served import open_table

SECTION = "content/notes/db/_index.md"
CASCADE = "---\ntitle: DB\ncascade:\n  params:\n    access: [sre]\n---\n"
STRATEGIES = ("fixed-1000", "section")


def built(data: Path, strategy: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A lane's chunks and its served table's rows (no vectors), sorted."""
    chunks = pd.read_parquet(data / "chunks" / f"{strategy}.parquet").sort_values("chunk_id")
    rows = open_table(data / "lancedb", strategy.replace("-", "_")).lance.to_pandas()
    rows = rows.drop(columns=["vector"]).sort_values("chunk_id")
    for frame in (chunks, rows):
        frame["access"] = frame["access"].map(list)
    return chunks.reset_index(drop=True), rows.reset_index(drop=True)


def test_a_cascade_change_rebuilds_the_notes_below(small_env, notes_repo, tmp_path, monkeypatch, capsys):
    env = small_env | {"RAG_STRATEGIES": ",".join(STRATEGIES), "RAG_RETRIEVERS": "dense"}
    instance = dg.DagsterInstance.ephemeral()
    assert make_run(project_definitions(env), instance)[1].success
    question = "デッドロックを検出した PostgreSQL はどんなエラーコードを返す?"
    code, out, _ = asked(monkeypatch, capsys, env, question, "--k", "20")
    assert code == 0 and "deadlock" in out

    commit_files(notes_repo, {SECTION: CASCADE}, "the db section is for sre")
    result = make_run(project_definitions(env), instance)[1]
    assert result.success
    notes = pd.read_parquet(Path(env["RAG_DATA_DIR"]) / "notes" / "source_notes.parquet").set_index("note")
    assert list(notes.loc["deadlock", "access"]) == ["sre"] and notes.loc["deadlock", "cascade"] == SECTION
    assert materialization_metadata(result, "cleaned_notes")["notes_changed"] == 1
    for strategy in STRATEGIES:
        assert (
            materialization_metadata(result, f"embeddings_{strategy.replace('-', '_')}")["texts_embedded"]
            == 0
        )
    code, out, _ = asked(monkeypatch, capsys, env, question, "--k", "20")
    assert code == 0 and "deadlock" not in out and "40P01" not in out

    fresh = env | {"RAG_DATA_DIR": str(tmp_path / "fresh")}
    assert make_run(project_definitions(fresh), dg.DagsterInstance.ephemeral())[1].success
    for strategy in STRATEGIES:
        (chunks, rows), (want_chunks, want_rows) = (
            built(Path(e["RAG_DATA_DIR"]), strategy) for e in (env, fresh)
        )
        pd.testing.assert_frame_equal(chunks, want_chunks)
        pd.testing.assert_frame_equal(rows.drop(columns=["commit"]), want_rows.drop(columns=["commit"]))
        assert all(a == ["sre"] for a in chunks.loc[chunks["note"] == "deadlock", "access"])
