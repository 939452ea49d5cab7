"""Which configuration is best in ledger rows: the headline hit per question (`HIT`), scored over the
answerable questions with `ok` or `carried` gold, the configurations ranked as the verdict ranks them,
and chosen on the development questions alone (no test question chooses, not even the ledger's
listing)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag_pipeline.lib.evaluation.confirmation import DIGITS
from rag_pipeline.lib.evaluation.metrics import HEADLINE_BUDGET
from rag_pipeline.lib.questions import DEV

SCORED = ("ok", "carried")  # the gold statuses under which a question is scored
HIT = f"hit@{HEADLINE_BUDGET}chars"  # the headline measure, per question


def scored_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows a measure is computed over: answerable questions scored under ok or carried gold."""
    keep = frame["answerable"].astype(bool) & frame["gold_status"].isin(SCORED) & frame[HIT].notna()
    return frame[keep]


def configurations(frame: pd.DataFrame) -> pd.DataFrame:
    """Per configuration (`strategy/retriever`): the headline value and MRR@10 over its scored
    questions, best first (ties on the rounded headline broken by MRR@10, as in the verdict).
    `on_dev` is what chooses."""
    rows = []
    for (strategy, retriever), run in scored_rows(frame).groupby(["strategy", "retriever"], sort=False):
        ranks = run["first_evidence_rank"].astype("Float64").to_numpy(dtype=float, na_value=np.inf)
        rows.append(
            {
                "configuration": f"{strategy}/{retriever}",
                "value": float(run[HIT].astype(bool).mean()),
                "mrr@10": float(np.where(ranks <= 10, 1 / ranks, 0.0).mean()),
                "n_questions": len(run),
            }
        )
    table = pd.DataFrame(rows, columns=["configuration", "value", "mrr@10", "n_questions"])
    order = table.assign(rounded=table["value"].round(DIGITS))
    return order.sort_values(["rounded", "mrr@10"], ascending=False, kind="stable").drop(columns="rounded")


def on_dev(frame: pd.DataFrame) -> pd.DataFrame:
    """The ledger rows of the development questions, the only ones that choose (rows recorded before
    splits existed have none: all of them)."""
    return frame[frame["split"] == DEV] if "split" in frame else frame


def best_on_dev(frame: pd.DataFrame) -> pd.Series | None:
    """The best configuration of ledger rows on their development questions (`configurations`'s
    first row), None when no development question was scored."""
    ranked = configurations(on_dev(frame))
    return None if ranked.empty else ranked.iloc[0]


def best_fields(frame: pd.DataFrame) -> dict[str, object]:
    """The index's `n_questions` (scored), `best` and `best_value` (on the development questions) of
    ledger rows."""
    best = best_on_dev(frame)
    return {
        "n_questions": int(scored_rows(frame)["question_id"].nunique()),
        "best": "" if best is None else best["configuration"],
        "best_value": float("nan") if best is None else round(float(best["value"]), DIGITS),
    }
