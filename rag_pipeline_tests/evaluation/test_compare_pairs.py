"""`experiments compare` without a configuration compares what changed: two experiments that differ in
the embedder on every configuration that uses it (dense and the hybrids, not BM25), in a fusion's
setting on the fusions it reaches, else on B's best on the development questions (`chosen_on: "dev"`),
and an experiment with itself not at all; `experiments list` counts the choices each test split
confirmed."""

import json

import pandas as pd

from rag_pipeline.lib.evaluation.experiments import INDEX
from rag_pipeline_tests.fakes.ollama import FakeOllama
from rag_pipeline_tests.support.farm import N_NOTES, cli, question, write_questions
from rag_pipeline_tests.support.runs import run_all


def test_an_embedder_change_is_compared_on_the_configurations_that_use_it(farm, monkeypatch, capsys):
    _, env, root = farm
    env = env | {"RAG_RETRIEVERS": "dense,bm25,rrf"}
    with FakeOllama() as server:
        server.max_chars = 5000
        assert run_all(
            env | {"RAG_EMBEDDER": "ollama", "RAG_EMBED_URL": server.url, "RAG_EMBED_MODEL": "bge-m3"}
        ).success
    assert run_all(env).success
    ids = list(pd.read_parquet(root / INDEX)["id"])
    status, out, _ = cli(monkeypatch, capsys, root, "compare")
    assert status == 0 and out.startswith(
        f"a {ids[0]} and b {ids[1]} differ in the embedder: compared on the 2 configurations the change reaches"
    )
    assert "| fixed-200/dense |" in out and "| fixed-200/rrf |" in out and "| fixed-200/bm25 |" not in out
    status, out, _ = cli(monkeypatch, capsys, root, "compare", "--json")
    got = json.loads(out)
    assert sorted(c["a"] for c in got) == [f"{ids[0]}:fixed-200/{r}" for r in ("dense", "rrf")]
    assert all(c["correction"] == "holm" for c in got)
    status, out, _ = cli(monkeypatch, capsys, root, "compare", "previous:fixed-200/bm25")  # named: that one
    assert status == 0 and "bm25" in out and f"{ids[0]}:fixed-200/bm25" in out
    assert "+0.00 (p = 1), 0 questions won, 0 lost" in out  # BM25 does not use the embedder
    for same in (["current", ids[1]], [f"{ids[1]}:fixed-200/rrf", "current"]):
        status, out, _ = cli(monkeypatch, capsys, root, "compare", *same)
        assert (
            status == 0 and f"are the same experiment {ids[1]} and configuration: nothing to compare" in out
        )
    status, out, _ = cli(
        monkeypatch, capsys, root, "compare", f"{ids[1]}:fixed-200/bm25", "current:fixed-200/rrf"
    )
    assert status == 0 and "compared on the" in out  # one experiment, two configurations
    status, out, _ = cli(monkeypatch, capsys, root, "list", "--json")
    assert [row["test_looks"] for row in json.loads(out)] == [2, 2]  # each new verdict confirmed on test
    monkeypatch.setenv("RAG_TEST_LOOKS", "1")
    status, out, _ = cli(monkeypatch, capsys, root, "list")
    assert status == 0 and "has confirmed 2 choices; warning: past RAG_TEST_LOOKS=1 it is over-used" in out


def test_a_fusion_setting_is_compared_on_the_fusions_and_otherwise_b_s_best_on_dev(
    farm, monkeypatch, capsys, tmp_path
):
    _, env, root = farm
    env = env | {"RAG_RETRIEVERS": "dense,bm25,rrf,minmax"}
    assert run_all(env).success
    assert run_all(env | {"RAG_RRF_K": "5"}).success
    status, out, _ = cli(monkeypatch, capsys, root, "compare", "--json")
    got = json.loads(out)  # rrf_k reaches rrf alone, not fixed-200/dense (+0.00, p = 1)
    assert status == 0 and [c["a"].split(":")[1] for c in got] == ["fixed-200/rrf"]
    assert run_all(env | {"RAG_RRF_K": "5", "RAG_DENSE_WEIGHT": "0.2"}).success
    status, out, _ = cli(monkeypatch, capsys, root, "compare")
    assert "differ in `retrieval.dense_weight`: compared on the 1 configurations the change reaches" in out
    assert "| fixed-200/minmax |" in out and "| fixed-200/dense |" not in out
    # other questions move every configuration: B's best on the development questions, said so
    questions = [question(i) for i in range(N_NOTES)]
    questions[0]["q"] += " (again)"
    env = env | {"RAG_QUESTIONS": write_questions(tmp_path / "edited.json", questions)}
    assert run_all(env | {"RAG_RRF_K": "5", "RAG_DENSE_WEIGHT": "0.2"}).success
    status, out, _ = cli(monkeypatch, capsys, root, "compare", "--json")
    got = json.loads(out)
    assert status == 0 and got["chosen_on"] == "dev" and "correction" not in got
