"""This project's MRR, nDCG and hit rate agree with trec_eval (through ir-measures) on real runs."""

from pathlib import Path

import dagster as dg
import ir_measures
import pandas as pd
import pytest
from ir_measures import RR, Success, nDCG

from rag_pipeline.definitions import assets, resources_from_env
from rag_pipeline.lib.evaluation import summarize
from rag_pipeline.lib.sources import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_QUESTIONS


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("agreement")
    build_repository(BUNDLED_CORPUS, root / "notes")
    env = {
        "RAG_NOTES_REPO": str(root / "notes"),
        "RAG_QUESTIONS": str(BUNDLED_QUESTIONS),
        "RAG_DATA_DIR": str(root / "out"),
        "RAG_EMBEDDER": "hashing",
        "RAG_RETRIEVERS": "dense,bm25,rrf+parent",
    }
    assert dg.materialize(
        assets, resources=resources_from_env(env), instance=dg.DagsterInstance.ephemeral()
    ).success
    return root / "out"


def qrels_for(chunks: pd.DataFrame, questions: pd.DataFrame, parent: bool) -> list:
    """Relevant units, computed here from scratch: a unit of the evidence's note covering half of it."""
    units = (
        chunks[["parent_id", "note", "parent_start", "parent_end"]]
        .drop_duplicates()
        .set_axis(["id", "note", "start", "end"], axis=1)
        if parent
        else chunks[["chunk_id", "note", "start", "end"]].set_axis(["id", "note", "start", "end"], axis=1)
    )
    qrels = []
    for q in questions.itertuples():
        for ev in q.evidence:
            if pd.isna(ev["start"]):
                continue
            same = units[units["note"] == ev["note"]]
            overlap = same["end"].clip(upper=ev["end"]) - same["start"].clip(lower=ev["start"])
            for unit in same[overlap * 2 >= ev["end"] - ev["start"]]["id"]:
                qrels.append(ir_measures.Qrel(q.question_id, unit, 1))
    return list({(r.query_id, r.doc_id): r for r in qrels}.values())


@pytest.mark.parametrize("strategy", ["fixed-200", "section", "section-split"])
def test_mrr_ndcg_and_hit_rate_match_trec_eval(built, strategy):
    chunks = pd.read_parquet(built / "chunks" / f"{strategy}.parquet")
    questions = pd.read_parquet(built / "notes" / "questions.parquet")
    retrieval = pd.read_parquet(built / "retrieval" / f"{strategy}.parquet")
    outcomes = pd.read_parquet(built / "evaluation" / f"{strategy}.parquet")
    answerable = set(questions.loc[questions["answerable"], "question_id"])
    for retriever, run in retrieval.groupby("retriever"):
        qrels = qrels_for(chunks, questions[questions["answerable"]], parent=retriever.endswith("+parent"))
        scored = [
            ir_measures.ScoredDoc(r.question_id, r.chunk_id, -float(r.rank))  # trec_eval orders by score
            for r in run.itertuples()
            if r.question_id in answerable
        ]
        ref = ir_measures.calc_aggregate([RR @ 10, nDCG @ 10, Success @ 1, Success @ 5], qrels, scored)
        ours = summarize(outcomes[outcomes["retriever"] == retriever]).set_index("k")
        assert ours.at[10, "mrr"] == pytest.approx(ref[RR @ 10], abs=1e-4), retriever
        assert ours.at[10, "ndcg"] == pytest.approx(ref[nDCG @ 10], abs=1e-4), retriever
        assert ours.at[1, "evidence_recall"] == pytest.approx(ref[Success @ 1], abs=1e-4), retriever
        assert ours.at[5, "evidence_recall"] == pytest.approx(ref[Success @ 5], abs=1e-4), retriever
