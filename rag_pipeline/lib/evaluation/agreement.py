"""Hand-written and generated questions kept apart: which set a report decides on, and whether the
two sets rank the configurations the same way.

Generated questions reuse the notes' words, so they can flatter lexical retrieval; the verdict is
decided on the hand-written set when there is one, and the report shows where the generated set
would order two configurations the other way.
"""

from __future__ import annotations

import itertools

import pandas as pd
from scipy.stats import kendalltau

from rag_pipeline.lib.evaluation.markdown import to_markdown
from rag_pipeline.lib.evaluation.metrics import HEADLINE, HEADLINE_BUDGET

SOURCES = ("hand", "generated")  # the first present is the one decided on
LABELS = {"hand": "hand-written", "generated": "generated"}
DIGITS = 4  # values equal to this many decimals tie
SHOWN_FLIPS = 10


def question_sets(outcomes: pd.DataFrame) -> list[str]:
    """The sets present among the outcomes, the one to decide on first (no `source`: all hand)."""
    present = set(outcomes["source"]) if "source" in outcomes else {"hand"}
    return [s for s in SOURCES if s in present]


def decided_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of a report table computed on the set the verdict was decided on."""
    if "source" not in summary:
        return summary
    return summary[summary["source"] == question_sets(summary)[0]].reset_index(drop=True)


def rank_agreement(first: pd.DataFrame, second: pd.DataFrame) -> dict[str, object]:
    """Kendall's tau between two configuration matrices' headline values (configurations in both),
    and the pairs of configurations the two order oppositely (a tie in either is no flip)."""
    a = first.set_index("configuration")[HEADLINE].round(DIGITS)
    b = second.set_index("configuration")[HEADLINE].round(DIGITS)
    common = [c for c in a.index if c in b.index]
    flips = [(x, y) for x, y in itertools.combinations(common, 2) if (a[x] - a[y]) * (b[x] - b[y]) < 0]
    tau = p = float("nan")
    if len(common) >= 2 and a[common].nunique() > 1 and b[common].nunique() > 1:
        result = kendalltau(a[common], b[common])
        tau, p = float(result.statistic), float(result.pvalue)
    return {
        "measure": HEADLINE,
        "configurations": len(common),
        "kendall_tau": None if tau != tau else round(tau, DIGITS),
        "p_value": None if p != p else round(p, DIGITS),
        "flips": [list(pair) for pair in flips],
    }


def side_by_side_md(matrices: dict[str, pd.DataFrame], counts: dict[str, int], agreement: dict) -> str:
    """The configurations' headline recall and rank on each set (in the first set's order), and the
    agreement between the sets."""
    sets = list(matrices)
    table = None
    for s in sets:
        m = matrices[s][["configuration", HEADLINE, "evid@5"]].reset_index(drop=True)
        m = m.assign(rank=m.index + 1).rename(
            columns={
                HEADLINE: f"r@{HEADLINE_BUDGET // 1000}k {s}",
                "evid@5": f"evid@5 {s}",
                "rank": f"rank {s}",
            }
        )
        table = m if table is None else table.merge(m, on="configuration", how="left")
    tau = agreement["kendall_tau"]
    flips = agreement["flips"]
    listed = "; ".join(f"`{x}` and `{y}`" for x, y in flips[:SHOWN_FLIPS])
    more = f" (and {len(flips) - SHOWN_FLIPS} more)" if len(flips) > SHOWN_FLIPS else ""
    lines = [
        "Each set is scored on its own; the verdict above is decided on the "
        f"{LABELS[sets[0]]} questions. Questions per set: "
        + ", ".join(f"{counts[s]} {LABELS[s]}" for s in sets)
        + ".",
        f"Rank agreement over {agreement['configurations']} configurations on evidence recall within "
        f"{HEADLINE_BUDGET:,} characters: Kendall's tau "
        + (
            "undefined (a set ties every configuration)"
            if tau is None
            else f"{tau:.2f} (p = {agreement['p_value']:.3g})"
        )
        + f"; {len(flips)} pair(s) ordered the other way"
        + (f": {listed}{more}." if flips else "."),
        to_markdown(table),
    ]
    return "\n\n".join(lines)
