"""`experiments compare --measure faithful`: judged outcomes per question go into the ledger and are
compared as the retrieval measures are. Real runs on the small repository; the second build's judge is
the stand-in on 127.0.0.1 (fakes/judge.py: a protocol fake, no judge model can be installed here)."""

import json
from pathlib import Path

import pandas as pd

from rag_pipeline.cli.experiments import main
from rag_pipeline_tests.fakes.judge import FakeJudge
from rag_pipeline_tests.fakes.llm import MODEL
from rag_pipeline_tests.support.repos import commit_files
from rag_pipeline_tests.support.runs import run_all

TCP = "content/notes/net/tcp-handshake/index.md"


def test_compare_on_a_judged_criterion(notes_repo, small_env, tmp_path, monkeypatch, capsys):
    env = small_env | {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense"}
    assert run_all(env).success  # judged by the rules: every extractive answer is faithful
    ledger = tmp_path / "out" / "experiments"
    first = json.loads((ledger / "current.json").read_text())["id"]
    judged = pd.read_parquet(ledger / first / "judged.parquet")
    assert set(judged["retriever"]) == {"none", "oracle", "dense"} and judged["faithful"].notna().all()
    path = Path(notes_repo.working_tree_dir, TCP)
    commit_files(notes_repo, {TCP: path.read_text() + "\nOne more line.\n"}, "tcp: a line more")
    with FakeJudge(yes=0.0) as server:  # says no to everything
        judge = {"RAG_JUDGE": "openai", "RAG_JUDGE_URL": server.url, "RAG_JUDGE_MODEL": MODEL}
        assert run_all(env | judge).success
    monkeypatch.setenv("RAG_DATA_DIR", env["RAG_DATA_DIR"])
    assert main(["compare", "--measure", "faithful", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["a"] == f"{first}:section/dense" and out["b"].endswith(":section/dense")
    assert out["measure"] == "faithful (the judge's share of yes)" and out["n_questions"] == 5
    assert (out["value_a"], out["value_b"], out["delta"]) == (1.0, 0.0, -1.0)
    # every yes turned to no
    assert len(out["lost"]) == 5 and out["won"] == []
    assert main(["compare", "--measure", "correct", "previous:-/oracle", "current"]) == 0
    text = capsys.readouterr().out
    assert "correct (the judge's share of yes)" in text and "the judge's score in a → in b" in text
    assert main(["compare", "--measure", "recall"]) == 2
    assert "--measure recall: not a measure" in capsys.readouterr().err
