"""The whole asset graph materialized in-process on a small real git repository."""

import json

import dagster as dg
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rag_pipeline_tests.support.runs import run_all


def test_whole_graph_on_small_repo(notes_repo, small_env, tmp_path):
    data = tmp_path / "out"
    result = run_all(small_env)
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert checks and all(c.passed for c in checks), [c.check_name for c in checks if not c.passed]

    notes = pq.read_table(data / "notes" / "source_notes.parquet").to_pandas()
    assert sorted(notes["note"]) == ["columnar-storage", "deadlock", "tcp-handshake"]  # _index.md excluded
    assert set(notes["commit"]) == {notes_repo.head.commit.hexsha}

    summary = pd.read_parquet(data / "reports" / "evaluation_summary.parquet")
    runs = {"dense", "bm25", "rrf", "minmax", "bm25+ctx", "rrf+parent"}
    assert set(summary["retriever"]) == runs  # the defaults: no contextual vectors are built
    embeddings = pq.read_schema(next((data / "embeddings").glob("*/section.parquet/bucket-00.parquet")))
    assert "vector_ctx" not in embeddings.names
    # every configured strategy keeps its rows; notes this short give identical chunks to several, and
    # `same_chunks_as` says whose
    strategies = set(summary["strategy"])
    assert strategies == {"fixed-200", "fixed-500", "fixed-1000", "fixed-2000", "section", "section-split"}
    same = summary.groupby("strategy")["same_chunks_as"].first().to_dict()
    assert (
        same["fixed-2000"] == "fixed-1000" and same["section-split"] == "section" and same["fixed-1000"] == ""
    )
    assert len(summary) == len(strategies) * len(runs) * 20
    assert summary["embedding_version"].str.startswith("hashing:").all()
    assert (summary["n_questions"] == 4).all() and (summary["n_unanswerable"] == 1).all()
    # recall can only grow with k, and the 1000-character lane holds whole notes here
    for _, run in summary.groupby(["strategy", "retriever"]):
        assert run.sort_values("k")["evidence_recall"].is_monotonic_increasing
    top20 = summary[
        (summary["strategy"] == "fixed-1000") & (summary["k"] == 20) & (summary["retriever"] == "dense")
    ].iloc[0]
    assert top20["note_recall"] == 1.0 and top20["evidence_recall"] == 1.0

    ranks = pd.read_parquet(data / "reports" / "question_ranks.parquet")
    assert len(ranks) == len(strategies) * len(runs) * 5
    assert ranks.loc[~ranks["answerable"], "first_evidence_rank"].isna().all()
    assert (data / "reports" / "report.md").read_text().startswith("# Retrieval evaluation")
    assert (data / "reports" / "recall_vs_chars.png").read_bytes()[:4] == b"\x89PNG"


def test_unknown_slug_fails_the_questions_asset(notes_repo, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": 7, "q": "?", "slug": "no-such-note", "section": "x", "evidence": "y"}]')
    env = {
        "RAG_NOTES_REPO": notes_repo.working_tree_dir,
        "RAG_QUESTIONS": str(bad),
        "RAG_DATA_DIR": str(tmp_path / "out"),
        "RAG_EMBEDDER": "hashing",
    }
    with pytest.raises(Exception, match="question 7: unknown note slug 'no-such-note'"):
        run_all(env, selection=["source_notes", "cleaned_notes", "questions"])


def test_the_summary_page_has_numbers_to_plot_and_a_headline_first(small_env, tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    assert run_all(small_env | {"RAG_RETRIEVERS": "dense,bm25"}, instance=instance).success
    event = instance.get_latest_materialization_event(dg.AssetKey("evaluation_summary"))
    metadata = event.asset_materialization.metadata
    summary = metadata["summary"].value
    verdict = json.loads((tmp_path / "out" / "reports" / "verdict.json").read_text())
    # read at a glance: the verdict as plain text first, then the tables a person reads first
    # shown inline, and what the lineage reads back last, in one entry
    assert list(metadata)[:3] == ["verdict", "top_configurations", "per_category"]
    # the verdict, then how many choices its test split has confirmed: four answerable questions make
    # no test question that could decide anything, so the verdict compares on dev, named so
    assert metadata["verdict"].value.startswith(verdict["wording"].replace("`", ""))
    assert (
        metadata["verdict"].value.endswith("(no test question: nothing is confirmed on the test split.)")
        and "`" not in metadata["verdict"].value
    )
    assert verdict["chosen_on"] == "dev" and (verdict["n_dev"], verdict["n_test"]) == (4, 0)
    assert verdict["compared_on"] == "dev" and not verdict["significant"]
    assert "are too few to confirm anything" in verdict["wording"] and "nan" not in verdict["wording"]
    top = metadata["top_configurations"]
    assert isinstance(top, dg.TableMetadataValue) and 1 <= len(top.records) <= 5
    assert top.records[0].data["configuration"] == verdict["best"][0]
    assert [c.name for c in top.schema.columns] == [
        "configuration",
        "r@2k",
        "dev",
        "test",
        "Δ",
        "p",
        "p95 ms",
        "cost/1k",
    ]
    per_category = metadata["per_category"]
    assert [c.name for c in per_category.schema.columns] == ["category", "best", "baseline"]
    assert {r.data["category"].split(" (")[0] for r in per_category.records} >= {"number"}
    # no long unbreakable string (a path, a full sha) widens the value column past a laptop screen
    plain = (dg.TextMetadataValue, dg.PathMetadataValue)
    shown = [str(v.value) for k, v in metadata.items() if k != "bookkeeping" and isinstance(v, plain)]
    shown += [str(cell) for table in (top, per_category) for r in table.records for cell in r.data.values()]
    words = [w for text in shown for w in text.split()]
    assert max(len(w) for w in words) <= 24, max(words, key=len)
    assert list(metadata)[-1] == "bookkeeping" and "outputs" not in metadata
    kept = metadata["bookkeeping"].value
    assert {"path": str(tmp_path / "out" / "reports" / "verdict.json")} in kept["outputs"]
    assert kept["report"] == str(tmp_path / "out" / "reports" / "report.md")
    assert (
        metadata["p_value"].value == verdict["p_value"]
        and metadata["significant"].value == verdict["significant"]
    )
    assert "`r@Nk` evidence recall" in summary  # the key to the column names
    for who in ("best", "baseline"):
        for name in ("recall@1", "recall@5", "recall@2000chars", "mrr@10"):
            assert isinstance(metadata[f"{who} {name}"], dg.FloatMetadataValue)
    assert isinstance(metadata["best_configuration"], dg.TextMetadataValue)
    lane = instance.get_latest_materialization_event(dg.AssetKey("evaluation_section")).asset_materialization
    assert isinstance(lane.metadata["dense evidence_recall@5"], dg.FloatMetadataValue)
    for png in ("which_configuration.png", "recall_heatmap.png"):
        assert (tmp_path / "out" / "reports" / png).read_bytes()[:4] == b"\x89PNG"
