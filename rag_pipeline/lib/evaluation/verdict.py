"""The verdict: which configuration is chosen on the development questions, whether it beats the
baseline significantly on the test questions, and one sentence that says both.

The headline measure is evidence recall within a budget of characters (`HEADLINE_BUDGET`): it
compares chunkers of every size fairly (each passes what fits), and a budget smaller than the
context budget keeps the measure from saturating; MRR@10 on the development questions breaks ties.
Choosing and confirming on the same questions would certify the winner's curse (see
`rag_pipeline.lib.evaluation.splits`).
"""

from __future__ import annotations

import pandas as pd

from rag_pipeline.lib.evaluation.metrics import HEADLINE, HEADLINE_BUDGET

MEASURE = f"evidence recall within {HEADLINE_BUDGET:,} characters"
ALPHA = 0.05
DIGITS = 4  # values equal to this many decimals tie
WEAK = 30  # fewer answerable test questions than this: the confirmation is weak
CHOSEN_ON = "dev"


def _names(labels: list[str]) -> str:
    quoted = [f"`{label}`" for label in labels]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


def _rounded(value: object) -> float | None:
    return None if pd.isna(value) else round(float(value), DIGITS)


def verdict(
    matrix: pd.DataFrame, baseline: str, questions: str | None = None, eligible: list[str] | None = None
) -> dict[str, object]:
    """From the configuration matrix (configuration, the headline column over all questions, `chars@5`,
    and the split figures: `dev`, `dev_mrr@10`, `test`, `Δ` and `p` of the test split against
    `baseline`, `n_dev`, `n_test`): the verdict's fields. `questions` names the question set it is
    decided on (e.g. `hand-written`) in the wording; `eligible` the configurations it may choose
    (default: all; see `budgets.py`), the baseline compared with in any case."""
    judged = _verdict(matrix, baseline, eligible)
    if questions:
        judged["wording"] = (
            f"{str(judged['wording']).removesuffix('.')}; decided on the {questions} questions."
        )
    if judged["test_delta"] is not None and judged["n_test"] < WEAK:
        judged["wording"] = (
            f"{judged['wording']} The confirmation is weak: {judged['n_test']} answerable test "
            f"questions (fewer than {WEAK})."
        )
    return judged


def _verdict(matrix: pd.DataFrame, baseline: str, eligible: list[str] | None) -> dict[str, object]:
    n_dev = int(matrix["n_dev"].iloc[0]) if len(matrix) else 0
    n_test = int(matrix["n_test"].iloc[0]) if len(matrix) else 0
    judged: dict[str, object] = {
        "best": [], "measure": MEASURE, "budget": HEADLINE_BUDGET, "best_value": None, "baseline": baseline,
        "baseline_value": None, "delta": None, "p_value": None, "significant": False, "chosen_on": CHOSEN_ON,
        "n_dev": n_dev, "n_test": n_test, "dev_value": None, "test_value": None, "test_delta": None,
        "test_p": None,
    }  # fmt: skip
    if matrix.empty:
        return judged | {"wording": "nothing to score"}
    if not n_dev:
        return judged | {
            "wording": f"No answerable development question to choose on ({n_test} test questions): give "
            'questions `"split": "dev"` or lower RAG_TEST_SHARE.'
        }
    ranked = matrix if eligible is None else matrix[matrix["configuration"].isin(eligible)]
    ranked = ranked.assign(value=ranked["dev"].round(DIGITS))
    ranked = ranked.sort_values(["value", "dev_mrr@10"], ascending=False, kind="stable")
    top = ranked[ranked["value"] == ranked["value"].iloc[0]]
    leader = top.iloc[0]
    base = matrix[matrix["configuration"] == baseline]
    compared = bool(len(base)) and n_test > 0
    delta, p = (float(leader["Δ"]), float(leader["p"])) if compared else (float("nan"), float("nan"))
    significant = bool(delta > 0 and p < ALPHA)
    best = top["configuration"].tolist()
    name = f"`{leader['configuration']}`"
    chosen = (
        f"{_names(best)} tie on {n_dev} development questions ({leader['value']:.2f}); {name}, the first "
        "by MRR@10, is chosen"
        if len(best) > 1
        else f"{name} is chosen on {n_dev} development questions ({leader['value']:.2f})"
    )
    if not len(base):
        wording = f"{chosen}; the baseline `{baseline}` was not evaluated, so nothing is confirmed."
    elif not n_test:
        wording = f"{chosen}; no answerable test question confirms it."
    elif significant:
        wording = f"{chosen}; on {n_test} test questions it beats the baseline `{baseline}` by {delta:+.2f} on {MEASURE} (p = {p:.3g})."
    else:
        even = ranked[ranked["value"] >= round(float(base["dev"].iloc[0]), DIGITS)]
        cheapest = even.sort_values(["chars@5", "dev_mrr@10"], ascending=[True, False], kind="stable")
        low = cheapest["chars@5"].iloc[0]
        names = cheapest.loc[cheapest["chars@5"] == low, "configuration"].tolist()
        wording = (
            f"No configuration beats the baseline `{baseline}` significantly on {MEASURE}: {name}, chosen "
            f"on {n_dev} development questions ({leader['value']:.2f}), differs from it by {delta:+.2f} on "
            f"{n_test} test questions (p = {p:.3g}); the cheapest at equal recall "
            f"{'is' if len(names) == 1 else 'are'} {_names(names)} ({int(low):,} characters at k=5)."
        )
    return judged | {
        "best": best,
        "best_value": _rounded(leader[HEADLINE]),
        "baseline_value": _rounded(base[HEADLINE].iloc[0]) if len(base) else None,
        "delta": _rounded(delta) if compared else None,
        "p_value": _rounded(p) if compared else None,
        "significant": significant,
        "dev_value": _rounded(leader["dev"]),
        "test_value": _rounded(leader["test"]) if n_test else None,
        "test_delta": _rounded(delta) if compared else None,
        "test_p": _rounded(p) if compared else None,
        "wording": wording,
    }
