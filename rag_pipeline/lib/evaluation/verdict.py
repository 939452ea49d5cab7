"""The verdict: which configurations lead on the headline measure, whether the leader beats the
baseline significantly on the same questions, and one sentence that says so.

The headline measure is evidence recall within a budget of characters (`HEADLINE_BUDGET`): it
compares chunkers of every size fairly (each passes what fits), and a budget smaller than the
context budget keeps the measure from saturating; MRR@10 breaks ties in the order.
"""

from __future__ import annotations

import pandas as pd

from rag_pipeline.lib.evaluation.metrics import HEADLINE, HEADLINE_BUDGET

MEASURE = f"evidence recall within {HEADLINE_BUDGET:,} characters"
ALPHA = 0.05
DIGITS = 4  # values equal to this many decimals tie


def _names(labels: list[str]) -> str:
    quoted = [f"`{label}`" for label in labels]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


def verdict(matrix: pd.DataFrame, baseline: str, questions: str | None = None) -> dict[str, object]:
    """From the configuration matrix (configuration, the headline column, `mrr@10`, `chars@5`,
    `Δ` and `p` against `baseline` on the same questions): the verdict's fields. `questions` names
    the question set it is decided on (e.g. `hand-written`) in the wording."""
    judged = _verdict(matrix, baseline)
    if questions:
        judged["wording"] = (
            f"{str(judged['wording']).removesuffix('.')}; decided on the {questions} questions."
        )
    return judged


def _verdict(matrix: pd.DataFrame, baseline: str) -> dict[str, object]:
    if matrix.empty:
        return {"best": [], "measure": MEASURE, "budget": HEADLINE_BUDGET, "baseline": baseline,
                "delta": None, "p_value": None, "significant": False, "wording": "nothing to score"}  # fmt: skip
    values = matrix[HEADLINE].round(DIGITS)
    ranked = matrix.assign(value=values).sort_values(["value", "mrr@10"], ascending=False, kind="stable")
    top = ranked[ranked["value"] == ranked["value"].iloc[0]]
    leader = top.iloc[0]
    base = matrix[matrix["configuration"] == baseline]
    base_value = float(base[HEADLINE].iloc[0]) if len(base) else float("nan")
    compared = "Δ" in matrix and len(base)  # no baseline run: nothing to compare with
    delta, p = (float(leader["Δ"]), float(leader["p"])) if compared else (float("nan"), float("nan"))
    significant = bool(delta > 0 and p < ALPHA)
    best = top["configuration"].tolist()
    if not compared:
        wording = f"{_names(best)} lead{'s' if len(best) == 1 else ''} on {MEASURE} ({leader['value']:.2f}); the baseline `{baseline}` was not evaluated, so nothing is compared."
    elif significant:
        lead = f"{_names(best)} tie at the top ({leader['value']:.2f}); " if len(best) > 1 else ""
        by = (
            f"`{leader['configuration']}`, the first by MRR@10,"
            if len(best) > 1
            else f"`{leader['configuration']}`"
        )
        wording = f"{lead}{by} beats the baseline `{baseline}` by {delta:+.2f} on {MEASURE} (p = {p:.3g})."
    else:
        even = ranked[ranked["value"] >= round(base_value, DIGITS)] if len(base) else ranked
        cheapest = even.sort_values(["chars@5", "mrr@10"], ascending=[True, False], kind="stable")
        low = cheapest["chars@5"].iloc[0]
        names = cheapest.loc[cheapest["chars@5"] == low, "configuration"].tolist()
        wording = (
            f"No configuration beats the baseline `{baseline}` significantly on {MEASURE} "
            f"(the leader {_names(best)}: {delta:+.2f}, p = {p:.3g}); the cheapest at equal recall "
            f"{'is' if len(names) == 1 else 'are'} {_names(names)} ({int(low):,} characters at k=5)."
        )
    return {
        "best": best,
        "measure": MEASURE,
        "budget": HEADLINE_BUDGET,
        "best_value": round(float(leader[HEADLINE]), DIGITS),
        "baseline": baseline,
        "baseline_value": round(base_value, DIGITS) if len(base) else None,
        "delta": round(delta, DIGITS) if compared else None,
        "p_value": round(p, DIGITS) if compared else None,
        "significant": significant,
        "wording": wording,
    }
