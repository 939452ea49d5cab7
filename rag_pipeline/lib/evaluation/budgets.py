"""The budgets the verdict chooses within: `RAG_BUDGET_LATENCY_P95_MS` against each configuration's
p95 over the questions of retrieval's latency per question, `RAG_BUDGET_COST_PER_1K` against its
cost of 1,000 questions at the user's prices (`prices.py`); an unknown figure meets no budget."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd

from rag_pipeline.lib.evaluation.prices import Prices
from rag_pipeline.lib.evaluation.verdict import verdict

LATENCY, COST = "RAG_BUDGET_LATENCY_P95_MS", "RAG_BUDGET_COST_PER_1K"


@dataclass(frozen=True)
class Budgets:
    latency_p95_ms: float | None = None
    cost_per_1k: float | None = None

    @property
    def any(self) -> bool:
        return self.latency_p95_ms is not None or self.cost_per_1k is not None


@dataclass(frozen=True)
class Costs:
    """Every configuration's priced figures (`priced`), the budgets, and the prices they used."""

    figures: pd.DataFrame
    budgets: Budgets
    prices: Prices

    def reported(self) -> pd.DataFrame:
        """The figures as `reports/costs.parquet` holds them (the CPU time measured is in the data
        directory's `costs/measured.parquet`: it varies from run to run, as a latency does)."""
        return self.figures.drop(columns=["embed_cpu_s"], errors="ignore")

    def metadata(self) -> dict[str, str]:
        return {"rag.budgets": json.dumps(self.entry())}

    def entry(self) -> dict[str, object]:
        """verdict.json's `budgets`: the limits (null: none), the currency, the prices' sha256."""
        return {
            "latency_p95_ms": self.budgets.latency_p95_ms,
            "cost_per_1k": self.budgets.cost_per_1k,
            "currency": self.prices.currency,
            "prices_sha256": self.prices.sha256,
        }


def reported_costs(figures: pd.DataFrame, entry: dict) -> Costs:
    """`reports/costs.parquet` and verdict.json's `budgets` as the report held them."""
    budgets = Budgets(entry.get("latency_p95_ms"), entry.get("cost_per_1k"))
    return Costs(figures, budgets, Prices(entry.get("currency", "USD"), {}, entry.get("prices_sha256", "")))


def over_budget(costs: Costs) -> dict[str, list[dict[str, object]]]:
    """Per configuration over a budget, each budget it is over: its variable, the limit and the
    measured figure (null when unknown, with why)."""
    over: dict[str, list[dict[str, object]]] = {}
    limits = (
        (LATENCY, costs.budgets.latency_p95_ms, "latency_p95_ms"),
        (COST, costs.budgets.cost_per_1k, "cost_per_1k"),
    )
    for row in costs.figures.itertuples(index=False):
        for variable, limit, column in limits:
            measured = float(getattr(row, column))
            if limit is not None and (math.isnan(measured) or measured > limit):
                found = {
                    "budget": variable,
                    "limit": limit,
                    "measured": None if math.isnan(measured) else round(measured, 4),
                }
                if math.isnan(measured):
                    found["why"] = row.cost_note or "not measured"
                over.setdefault(row.configuration, []).append(found)
    return over


def _figure(value: float, unit: str) -> str:
    return "unknown" if math.isnan(value) else f"{value:,.4g} {unit}"


def _cost(value: float) -> str:
    """A cost as a table cell: three significant digits (a fraction of a cent shows), `?` unpriced."""
    return "?" if value != value else f"{value:.3g}"


def with_costs(matrix: pd.DataFrame, costs: Costs | None) -> pd.DataFrame:
    """The configuration matrix with each configuration's `p95 ms` and `cost/1k` beside its recall;
    with budgets, those within them first (each part in the matrix's order)."""
    if costs is None or matrix.empty:
        return matrix
    figures = costs.figures.set_index("configuration")
    shown = matrix.assign(
        **{
            "p95 ms": matrix["configuration"].map(figures["latency_p95_ms"]),
            "cost/1k": [_cost(v) for v in matrix["configuration"].map(figures["cost_per_1k"])],
        }
    )
    over = over_budget(costs)
    return shown.sort_values("configuration", key=lambda c: c.isin(over), kind="stable").reset_index(
        drop=True
    )


def extremes(costs: Costs) -> dict[str, str]:
    """The cheapest configuration (then the fastest of equal cost) and the fastest, with their figures."""
    figures = costs.figures
    cheapest = figures.sort_values(["cost_per_1k", "latency_p95_ms"], kind="stable").iloc[0]
    fastest = figures.sort_values(["latency_p95_ms", "cost_per_1k"], kind="stable").iloc[0]
    per = f"{costs.prices.currency} per 1,000 questions"
    return {
        "cheapest": f"`{cheapest['configuration']}` ({_figure(cheapest['cost_per_1k'], per)})",
        "fastest": f"`{fastest['configuration']}` ({_figure(fastest['latency_p95_ms'], 'ms')} p95)",
    }


def excluded_md(over: dict[str, list[dict[str, object]]], shown: int = 5) -> str:
    """The configurations over budget and why, the first `shown` of them."""

    def one(b: dict) -> str:
        if b["measured"] is None:
            return f"{b['budget']}: unknown, {b.get('why', 'not measured')}"
        return f"{b['budget']}={b['limit']}: {b['measured']:g}"

    items = [f"`{name}` ({', '.join(one(b) for b in budgets)})" for name, budgets in over.items()]
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def budgeted_verdict(
    matrix: pd.DataFrame, baseline: str, questions: str | None, costs: Costs | None, kept: str | None = None
) -> dict:
    """The verdict (`verdict.verdict`, `kept` as there) choosing among the configurations within every
    budget, with `budgets` and `over_budget` (configuration -> each budget it is over, the limit and
    the measured figure; one not measured is over every budget); when none is within, nothing is
    chosen (not even `kept`) and the cheapest and the fastest are named. Without budgets, the verdict
    as it was."""
    if costs is None or not costs.budgets.any:
        return verdict(matrix, baseline, questions, kept) | {
            "budgets": costs.entry() if costs else {},
            "over_budget": {},
        }
    over = over_budget(costs)
    configurations = list(matrix["configuration"]) if len(matrix) else []
    measured = set(costs.figures["configuration"])
    over |= {
        c: [{"budget": "every budget", "limit": None, "measured": None, "why": "not measured"}]
        for c in configurations
        if c not in measured
    }
    fields = {"budgets": costs.entry(), "over_budget": over}
    eligible = [c for c in configurations if c not in over]
    if eligible or matrix.empty:
        judged = verdict(matrix, baseline, questions, kept, eligible) | fields
        if over:
            judged["wording"] = f"{judged['wording']} Over budget, not chosen: {excluded_md(over)}."
        return judged
    judged = verdict(matrix.iloc[:0], baseline, questions, kept) | fields | extremes(costs)
    budgets = ((LATENCY, costs.budgets.latency_p95_ms), (COST, costs.budgets.cost_per_1k))
    limits = ", ".join(f"{name}={limit:g}" for name, limit in budgets if limit is not None)
    judged["wording"] = (
        f"No configuration is within the budgets ({limits}): none is chosen, and the release keeps the live "
        f"index. The cheapest is {judged['cheapest']}, the fastest {judged['fastest']}; over budget: "
        f"{excluded_md(over)}."
    )
    return judged | {"n_dev": int(matrix["n_dev"].iloc[0]), "n_test": int(matrix["n_test"].iloc[0])}
