"""Latency and cost budgets through `python -m rag_pipeline.run` on the bundled corpus (hashing
embedder, one strategy and two retrievers, to stay lean): every configuration's p95 latency and cost
per 1,000 questions in the report's configuration table; an edited prices file makes exactly the
verdict, the report and the release stale; a latency budget no configuration meets leaves nothing
chosen, the run exiting 3 and the live release as it was; without a budget the verdict is as before."""

import json
import re
import shutil

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.lib.sources.bundled_repo import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_PRICES, BUNDLED_QUESTIONS
from rag_pipeline_tests.support.runs import cli, hashing_env

ROW = re.compile(r"^\| (\S+) \|.*\| ([\d.]+) \| (\S+) \|$", re.M)  # a configuration, its p95 ms, cost/1k


def latest(home, asset: str):
    return dg.DagsterInstance.from_config(str(home)).get_latest_materialization_event(dg.AssetKey(asset))


def reused(home, asset: str) -> bool:
    """Whether the asset's latest materialization took its last output again (its inputs unchanged)."""
    return "reused" in latest(home, asset).asset_materialization.metadata


def run_of(home, asset: str) -> str:
    return latest(home, asset).run_id


def answered(data) -> set[str]:
    """The runs answered besides the `none` and `oracle` baselines."""
    frame = pd.read_parquet(data / "answers" / "answers.parquet", columns=["strategy", "retriever"])
    return {f"{s}/{r}" for s, r in zip(frame["strategy"], frame["retriever"]) if s != "-"}


@pytest.mark.slow
def test_budgets_decide_the_choice_and_the_gate(tmp_path):
    build_repository(BUNDLED_CORPUS, tmp_path / "notes")
    prices = tmp_path / "prices.toml"
    shutil.copy(BUNDLED_PRICES, prices)
    data = tmp_path / "data"
    env = hashing_env(
        tmp_path / "notes",
        BUNDLED_QUESTIONS,
        "fixed-1000",
        "dense,bm25",
        RAG_DATA_DIR=str(data),
        RAG_PRICES=str(prices),
    )
    first = cli("rag_pipeline.run", ["--report"], env, tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    verdict = json.loads((data / "reports" / "verdict.json").read_text())
    assert verdict["over_budget"] == {} and verdict["budgets"]["latency_p95_ms"] is None and verdict["best"]
    # the served run and the verdict's choice are answered (the choice is the development questions' leader)
    assert verdict["best"] == ["fixed-1000/bm25"] and answered(data) == {
        "fixed-1000/dense",
        "fixed-1000/bm25",
    }
    figures = pd.read_parquet(data / "reports" / "costs.parquet")
    configurations = set(figures["configuration"])
    assert configurations == {"fixed-1000", "fixed-1000/bm25"}
    assert (figures["latency_p95_ms"] > 0).all() and (figures["cost_per_1k"] == 0).all()  # in-process: free
    # the configuration table, in report.md and as `make run` prints it: a p95 and a cost in every row
    for text in ((data / "reports" / "report.md").read_text(), first.stdout):
        assert "| p95 ms | cost/1k |" in text
        assert {m.group(1) for m in ROW.finditer(text.split("| configuration |", 1)[1])} >= configurations

    # an edited price: the verdict, the report and the release decide again, nothing else is recomputed
    prices.write_text(prices.read_text() + "\n[rerank.tei]\nper_1k_calls = 0.0\n")
    again = cli("rag_pipeline.run", [], env, tmp_path)
    assert again.returncode == 0, again.stdout[-3000:]
    home = tmp_path / "dagster_home"
    computed = ("budgets", "evaluation_summary", "answers", "judgments", "release")
    assert [reused(home, a) for a in computed] == [False, False, True, True, False]
    assert run_of(home, "costs") != run_of(home, "release")  # nothing measured again
    after = json.loads((data / "reports" / "verdict.json").read_text())
    assert after["budgets"]["prices_sha256"] != verdict["budgets"]["prices_sha256"]
    assert {k: v for k, v in after.items() if k != "budgets"} == {
        k: v for k, v in verdict.items() if k != "budgets"
    }

    # a latency budget no configuration meets: nothing chosen, the gate keeps live, exit 3
    current = (data / "release" / "current.json").read_bytes()
    budget = cli("rag_pipeline.run", [], env | {"RAG_BUDGET_LATENCY_P95_MS": "0.001"}, tmp_path)
    assert budget.returncode == 3, budget.stdout[-3000:] + budget.stderr[-3000:]
    held = json.loads((data / "reports" / "verdict.json").read_text())
    assert set(held["over_budget"]) == configurations and held["best"] == []
    assert all(o[0]["budget"] == "RAG_BUDGET_LATENCY_P95_MS" for o in held["over_budget"].values())
    assert held["wording"].startswith(
        "No configuration is within the budgets (RAG_BUDGET_LATENCY_P95_MS=0.001)"
    )
    assert "no configuration is within the budgets: the cheapest is" in budget.stdout
    assert "the release run fixed-1000/dense is over budget" in budget.stdout
    assert (data / "release" / "current.json").read_bytes() == current
    # the answers follow the choice the budgets moved, as a build from scratch answers: the served run only
    assert answered(data) == {"fixed-1000/dense"}
