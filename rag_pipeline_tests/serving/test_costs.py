"""What a configuration costs per question, measured on a real served table: the stages it runs are
what its latency sums, the query's characters are counted only where a query is embedded, and a
reranker's calls and characters are those sent (to the reranker stand-in of `fakes/reranker.py`:
no cross-encoder can be installed here)."""

import time

import numpy as np
import pandas as pd

from rag_pipeline.lib.embedding.factory import make_embedder
from rag_pipeline.lib.evaluation import Ranking
from rag_pipeline.lib.retrieval import ChunkIndex, HttpReranker, RetrievalSettings, make_analyzer
from rag_pipeline.lib.serving import LanceStore, serving_rows, sync_table, table_key
from rag_pipeline.lib.serving.costs import Asked, configuration_costs, embedding_times
from rag_pipeline.lib.serving.measured import asked_questions, measured_costs
from rag_pipeline.lib.serving.store import DEFAULT_ANN
from rag_pipeline_tests.fakes.reranker import FakeReranker
from rag_pipeline_tests.serving.test_serving import NOW, chunks
from rag_pipeline_tests.support.served import open_table

QUESTIONS = ["text 3 of n1", "text 0 of n2?", "どの note の text 4?"]
SLEEP_S = 0.05  # the stand-in embedder's time per query


def test_each_configuration_costs_the_stages_it_runs(tmp_path):
    frame = chunks({"n1": [], "n2": ["sre"], "n3": []}).assign(parent_id=lambda f: f["note"])
    frame = frame.assign(parent_start=0, parent_end=100)
    model = make_embedder("hashing")
    sync_table(tmp_path, "s", serving_rows(frame, model.embed(frame["text"].tolist(), "passage")), retain=NOW)
    index = ChunkIndex(chunks=frame, vectors=np.zeros((len(frame), 0)), analyzer=make_analyzer("char"))

    sent: list[str] = []

    def slow(texts: list[str]) -> np.ndarray:
        sent.extend(texts)
        time.sleep(SLEEP_S)
        return model.embed(texts, "query")

    kept = tmp_path / "times.parquet"
    times = embedding_times(kept, "v1", QUESTIONS, slow)
    assert sent == QUESTIONS and all(ms >= SLEEP_S * 1000 for ms, _ in times)
    # timed once per embedder and question: a build sends none it has timed, another embedder all
    assert embedding_times(kept, "v1", QUESTIONS[::-1], slow) == times[::-1] and len(sent) == 3
    assert len(embedding_times(kept, "v2", QUESTIONS[:1], slow)) == 1 and len(sent) == 4
    vectors = model.embed(QUESTIONS, "query")
    asked = [Asked(*a) for a in zip(QUESTIONS, [None, ["sre"], []], vectors, *zip(*times))]
    settings = RetrievalSettings(candidate_k=20, rerank_k=5, context_k=5)
    configurations = ["dense", "bm25", "rrf+parent", "dense+rerank"]
    with FakeReranker() as server:
        reranker = HttpReranker(server.url)
        found = configuration_costs(
            open_table(tmp_path, "s"), index, "s", configurations, asked, settings, reranker
        )
        calls = server.calls
    got = found.set_index("retriever")
    assert got.index.tolist() == configurations and (got["n_questions"] == 3).all()
    assert (got["latency_p95_ms"] >= got["latency_p50_ms"]).all()
    # the query's embedding is part of every configuration that embeds it, and of no other
    for retriever in ("dense", "rrf+parent", "dense+rerank"):
        assert got.at[retriever, "latency_p50_ms"] >= SLEEP_S * 1000
        assert got.at[retriever, "embed_chars"] == np.mean([len(q) for q in QUESTIONS])
    assert got.at["bm25", "latency_p50_ms"] < SLEEP_S * 1000 and got.at["bm25", "embed_chars"] == 0
    # one reranker call per question, its characters those sent: the query and rerank_k passages
    assert len(calls) == 3 and all(len(call["texts"]) == 5 for call in calls)
    chars = np.mean([len(c["query"]) + sum(map(len, c["texts"])) for c in calls])
    assert (got.at["dense+rerank", "rerank_calls"], got.at["dense+rerank", "rerank_chars"]) == (1.0, chars)
    assert (got.drop(index="dense+rerank")[["rerank_calls", "rerank_chars"]] == 0).all().all()
    # the public asker's call carries no passage of the sre note
    assert not any("of n2" in text for text in calls[2]["texts"])


def test_no_question_no_figure(tmp_path):
    frame = chunks({"n1": []}).assign(parent_id="p", parent_start=0, parent_end=1)
    model = make_embedder("hashing")
    sync_table(tmp_path, "s", serving_rows(frame, model.embed(frame["text"].tolist(), "passage")), retain=NOW)
    index = ChunkIndex(chunks=frame, vectors=np.zeros((len(frame), 0)), analyzer=make_analyzer("char"))
    found = configuration_costs(open_table(tmp_path, "s"), index, "s", ["dense"], [], RetrievalSettings())
    assert found["n_questions"].tolist() == [0] and pd.isna(found["latency_p95_ms"]).all()


def test_every_strategy_is_measured_on_its_served_table_and_each_query_timed_once(tmp_path):
    model = make_embedder("hashing")
    lanes = {}
    for name, notes in (("a-1", {"n1": [], "n2": ["sre"]}), ("b-2", {"n1": []})):
        lanes[name] = chunks(notes).assign(parent_id=lambda f: f["note"], parent_start=0, parent_end=100)
        rows = serving_rows(lanes[name], model.embed(lanes[name]["text"].tolist(), "passage"))
        sync_table(tmp_path, table_key(name), rows, retain=NOW)
    questions = pd.DataFrame({"question_id": ["1", "2", "3"], "q": QUESTIONS, "groups": [None, ["sre"], []]})
    asked = asked_questions(questions, model.embed(QUESTIONS, "query"), model, tmp_path / "times.parquet")
    assert [a.groups for a in asked] == [None, ["sre"], []] and [a.text for a in asked] == QUESTIONS
    again = asked_questions(questions, model.embed(QUESTIONS, "query"), model, tmp_path / "times.parquet")
    assert [a.embed_ms for a in again] == [a.embed_ms for a in asked]  # timed once, then kept
    ranking = Ranking(["dense", "bm25"], RetrievalSettings(candidate_k=20), None, make_analyzer("char"))
    found = measured_costs(
        ["a-1", "b-2"], lanes.__getitem__, LanceStore(tmp_path), asked, ranking, DEFAULT_ANN, tmp_path
    )
    assert found[["strategy", "retriever"]].values.tolist() == [
        ["a-1", "dense"],
        ["a-1", "bm25"],
        ["b-2", "dense"],
        ["b-2", "bm25"],
    ]
    assert (found["n_questions"] == 3).all()
