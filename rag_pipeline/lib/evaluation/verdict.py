"""The verdict: which configuration is chosen on the development questions, whether it beats the
baseline significantly on the test questions, and one sentence that says both.

The headline measure is evidence recall within a budget of characters (`HEADLINE_BUDGET`): it
compares chunkers of every size fairly (each passes what fits), and a budget smaller than the
context budget keeps the measure from saturating; MRR@10 on the development questions breaks ties.
Choosing and confirming on the same questions would certify the winner's curse (see
`rag_pipeline.lib.evaluation.confirmation`).

Every figure of the comparison is of one population: `best_value`, `baseline_value`, `delta` and
`p_value` are the test questions' (`compared_on: "test"`), the development figures are under `dev_*`
keys. With fewer test questions than can decide anything (`FEWEST_TO_DECIDE`), the comparison is made
on the development questions and named so (`compared_on: "dev"`), never on a NaN, and nothing is
significant: those questions chose the configuration, and flatter it.
"""

from __future__ import annotations

import pandas as pd

from rag_pipeline.lib.evaluation.confirmation import DIGITS, MATRIX_COLUMNS, dev_order
from rag_pipeline.lib.evaluation.metrics import HEADLINE_BUDGET
from rag_pipeline.lib.evaluation.significance import FEWEST_TO_DECIDE, p_text, p_value

MEASURE = f"evidence recall within {HEADLINE_BUDGET:,} characters"
ALPHA = 0.05
WEAK = 30  # fewer answerable test questions than this: the confirmation is weak
CHOSEN_ON = "dev"
KEEP = "RAG_CHOSEN_RUN"  # the setting that tells the verdict to keep a configuration tune chose


def _names(labels: list[str]) -> str:
    quoted = [f"`{label}`" for label in labels]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


def _rounded(value: object) -> float | None:
    return None if pd.isna(value) else round(float(value), DIGITS)


def verdict(
    matrix: pd.DataFrame,
    baseline: str,
    questions: str | None = None,
    kept: str | None = None,
    eligible: list[str] | None = None,
) -> dict[str, object]:
    """From the configuration matrix (configuration, `chars@5`, and the split figures of
    `splits.FIGURES`, `Δ` and `p` being the test split's against `baseline`): the verdict's fields.
    `questions` names the question set it is decided on (e.g. `hand-written`) in the wording; `kept`
    a configuration to keep as the choice (RAG_CHOSEN_RUN: tune chose it on development questions);
    `eligible` the configurations it may choose (default: all; see `budgets.py`), the baseline
    compared with in any case."""
    judged = _verdict(matrix, baseline, kept, eligible)
    if questions:
        judged["wording"] = (
            f"{str(judged['wording']).removesuffix('.')}; decided on the {questions} questions."
        )
    if judged["compared_on"] == "test" and judged["n_test"] < WEAK:
        judged["wording"] = (
            f"{judged['wording']} The confirmation is weak: {judged['n_test']} answerable test "
            f"questions (fewer than {WEAK})."
        )
    return judged


def choice(
    matrix: pd.DataFrame, kept: str | None, eligible: list[str] | None = None
) -> tuple[pd.DataFrame, list[str], str]:
    """(the `eligible` configurations of the matrix, default all, in the verdict's order, those tied
    at the top on the development questions, and the one chosen: `kept` when eligible, else the
    first of the tied)."""
    pool = matrix if eligible is None else matrix[matrix["configuration"].isin(eligible)]
    ranked = dev_order(pool).assign(value=lambda f: f["dev"].round(DIGITS))
    top = ranked[ranked["value"] == ranked["value"].iloc[0]]["configuration"].tolist()
    chosen = kept if kept in set(ranked["configuration"]) else top[0]
    return ranked, top, chosen


def chosen_sentence(
    ranked: pd.DataFrame, top: list[str], chosen: str, n_dev: int, kept: str | None, over: bool = False
) -> str:
    row = ranked[ranked["configuration"] == chosen].iloc[0]
    name = f"`{chosen}`"
    if chosen == kept:
        return (
            f"{name} is kept as chosen ({KEEP}: tune chose it on development questions; here "
            f"{row['value']:.2f} on {n_dev} of them)"
        )
    missing = f"{KEEP}={kept} {'is over budget' if over else 'was not evaluated'}; " if kept else ""
    if len(top) > 1:
        return (
            f"{missing}{_names(top)} tie on {n_dev} development questions ({row['value']:.2f}); {name}, the "
            "first by MRR@10, is chosen"
        )
    return f"{missing}{name} is chosen on {n_dev} development questions ({row['value']:.2f})"


def appositive(leader: pd.Series, n_dev: int, kept: str | None) -> str:
    """`` `a`, chosen on 196 development questions (0.85)`` (or kept as chosen)."""
    how = f"kept as chosen ({KEEP})" if leader["configuration"] == kept else "chosen"
    return f"`{leader['configuration']}`, {how} on {n_dev} development questions ({leader['value']:.2f})"


def comparison(leader: pd.Series, n_test: int) -> dict[str, object]:
    """The chosen configuration against the baseline on one population: the test questions, or the
    development questions (named so) when too few test questions can decide."""
    on = "test" if n_test >= FEWEST_TO_DECIDE else "dev"
    best, base = _rounded(leader[on]), _rounded(leader[f"{on}_baseline"])
    p = leader[MATRIX_COLUMNS.get(f"{on}_p", f"{on}_p")]
    return {
        "compared_on": on,
        "best_value": best,
        "baseline_value": base,
        # the difference of the two figures as kept: best_value - baseline_value is delta
        "delta": None if best is None or base is None else round(best - base, DIGITS),
        "p_value": None if pd.isna(p) else p_value(p),
    }


def _verdict(
    matrix: pd.DataFrame, baseline: str, kept: str | None, eligible: list[str] | None
) -> dict[str, object]:
    n_dev = int(matrix["n_dev"].iloc[0]) if len(matrix) else 0
    n_test = int(matrix["n_test"].iloc[0]) if len(matrix) else 0
    judged: dict[str, object] = {
        "best": [], "measure": MEASURE, "budget": HEADLINE_BUDGET, "chosen_on": CHOSEN_ON, "kept": kept,
        "compared_on": None, "best_value": None, "baseline": baseline, "baseline_value": None,
        "delta": None, "p_value": None, "significant": False, "n_dev": n_dev, "n_test": n_test,
        "dev_value": None, "dev_baseline_value": None, "dev_delta": None, "dev_p": None,
        "test_value": None, "test_delta": None, "test_p": None,
    }  # fmt: skip
    if matrix.empty:
        return judged | {"wording": "nothing to score"}
    if not n_dev:
        return judged | {
            "wording": f"No answerable development question to choose on ({n_test} test questions): give "
            'questions `"split": "dev"` or lower RAG_TEST_SHARE.'
        }
    ranked, top, chosen = choice(matrix, kept, eligible)
    leader = ranked[ranked["configuration"] == chosen].iloc[0]
    over = kept in set(matrix["configuration"]) and kept not in set(ranked["configuration"])
    said = chosen_sentence(ranked, top, chosen, n_dev, kept, over)
    judged |= {
        "best": [chosen] if chosen == kept else top,
        "dev_value": _rounded(leader["dev"]),
        "test_value": _rounded(leader["test"]),
    }
    base = matrix[matrix["configuration"] == baseline]
    if base.empty:
        return judged | {
            "wording": f"{said}; the baseline `{baseline}` was not evaluated, so nothing is confirmed."
        }
    compared = comparison(leader, n_test)
    dev_p = leader["dev_p"]
    judged |= compared | {
        "dev_baseline_value": _rounded(leader["dev_baseline"]),
        "dev_delta": _rounded(leader["dev_delta"]),
        "dev_p": None if pd.isna(dev_p) else p_value(dev_p),
    }
    delta, p = compared["delta"], compared["p_value"]
    if delta is None or p is None:  # the baseline scored under another embedder: no shared figures
        return judged | {
            "compared_on": None,
            "wording": f"{said}; the baseline `{baseline}` has no figure on the same questions, so nothing "
            "is confirmed.",
        }
    if compared["compared_on"] == "dev":
        return judged | {
            "wording": f"{said}; {n_test} answerable test question(s) are too few to confirm anything "
            f"(fewer than {FEWEST_TO_DECIDE}), so it is compared on the development questions that chose "
            f"it, which flatter it: {delta:+.2f} against the baseline `{baseline}` on {MEASURE} "
            f"({p_text(p)}), not significant by design; add test questions or raise RAG_TEST_SHARE."
        }
    significant = bool(delta > 0 and p < ALPHA)
    judged |= {"significant": significant, "test_delta": delta, "test_p": p}
    figures = f"{compared['best_value']:.2f} against {compared['baseline_value']:.2f}, {p_text(p)}"
    if significant:
        return judged | {
            "wording": f"{said}; on {n_test} test questions it beats the baseline `{baseline}` by "
            f"{delta:+.2f} on {MEASURE} ({figures})."
        }
    even = ranked[ranked["value"] >= round(float(base["dev"].iloc[0]), DIGITS)]
    cheapest = even.sort_values(["chars@5", "dev_mrr@10"], ascending=[True, False], kind="stable")
    low = cheapest["chars@5"].iloc[0]
    names = cheapest.loc[cheapest["chars@5"] == low, "configuration"].tolist()
    return judged | {
        "wording": f"No configuration beats the baseline `{baseline}` significantly on {MEASURE}: "
        f"{appositive(leader, n_dev, kept)}, differs from it "
        f"by {delta:+.2f} on {n_test} test questions ({figures}); the cheapest at equal recall "
        f"{'is' if len(names) == 1 else 'are'} {_names(names)} ({int(low):,} characters at k=5)."
    }
