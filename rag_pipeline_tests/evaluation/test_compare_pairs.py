"""`experiments compare` without a configuration compares what changed: two experiments that differ in
the embedder on every configuration that uses it (dense and the hybrids, not BM25), and an experiment
with itself not at all; `experiments list` counts the choices each test split confirmed."""

import json

import pandas as pd

from rag_pipeline.lib.evaluation.experiments import INDEX
from rag_pipeline_tests.fakes.ollama import FakeOllama
from rag_pipeline_tests.support.farm import cli
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
        f"a {ids[0]} and b {ids[1]} differ in the embedder: compared on the 2 configurations that use it"
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
