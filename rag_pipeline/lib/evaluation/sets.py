"""Hand-written and generated questions kept apart: the report over both sets, which set it decides
on, and whether the two sets rank the configurations the same way.

Generated questions reuse the notes' words, so they can flatter lexical retrieval; the verdict is
decided on the hand-written set when there is one, and the report shows where the generated set
would order two configurations the other way.
"""

from __future__ import annotations

import itertools

import pandas as pd

from rag_pipeline.lib.evaluation.budgets import Costs
from rag_pipeline.lib.evaluation.markdown import to_markdown
from rag_pipeline.lib.evaluation.metrics import HEADLINE, HEADLINE_BUDGET
from rag_pipeline.lib.evaluation.report import LABELS, Report, single_report
from rag_pipeline.lib.evaluation.tables import Reported, compute_tables

SOURCES = ("hand", "generated")  # the first present is the one decided on
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


def other_sets(
    by_set: dict[str, pd.DataFrame],
    reported: Reported,
    counts: dict[str, int],
    commit: str,
    same: dict[str, str],
) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """The report tables of the sets not decided on (rows tagged with `source`) and, per set, its
    configuration matrix (strategies with the same chunks as another folded, as in the report)."""
    tables: dict[str, list[pd.DataFrame]] = {}
    matrices = {}
    for source, outcomes in by_set.items():
        computed = compute_tables(outcomes, reported, counts=counts, commit=commit)
        computed.summary["same_chunks_as"] = computed.summary["strategy"].map(same).fillna("")
        for name, frame in computed.named().items():
            tables.setdefault(name, []).append(frame.assign(source=source))
        matrix = computed.matrix
        matrices[source] = matrix[~matrix["strategy"].isin(list(same))].reset_index(drop=True)
    return {name: pd.concat(frames, ignore_index=True) for name, frames in tables.items()}, matrices


def rank_agreement(first: pd.DataFrame, second: pd.DataFrame) -> dict[str, object]:
    """Kendall's tau between two configuration matrices' headline values (configurations in both),
    and the pairs of configurations the two order oppositely (a tie in either is no flip)."""
    a = first.set_index("configuration")[HEADLINE].round(DIGITS)
    b = second.set_index("configuration")[HEADLINE].round(DIGITS)
    common = [c for c in a.index if c in b.index]
    flips = [(x, y) for x, y in itertools.combinations(common, 2) if (a[x] - a[y]) * (b[x] - b[y]) < 0]
    tau = p = float("nan")
    if len(common) >= 2 and a[common].nunique() > 1 and b[common].nunique() > 1:
        from scipy.stats import kendalltau  # scipy.stats takes seconds to import

        result = kendalltau(a[common], b[common])
        tau, p = float(result.statistic), float(result.pvalue)
    return {
        "measure": HEADLINE,
        "configurations": len(common),
        "kendall_tau": None if tau != tau else round(tau, DIGITS),
        "p_value": None if p != p else float(f"{p:.3g}"),
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


def build_report(
    outcomes: pd.DataFrame,
    reported: Reported,
    provenance: dict[str, str],
    invalid: dict[str, str],
    same: dict[str, str] | None = None,
    gold: dict[str, int] | None = None,
    drawn: dict[str, tuple[bytes, ...]] | None = None,
    costs: Costs | None = None,
) -> Report:
    """The evaluation report (`single_report`) with hand-written and generated questions (`source`)
    scored apart: every table's rows carry their set in `source`; the verdict, the plots and the
    pages are those of the hand-written set when there is one, and a section sets both side by side
    with their rank agreement. `costs`: each configuration's latency and cost, and the budgets."""
    counts = {"n_invalid": len(invalid), **(gold or {})}
    same = same or {}
    sets = question_sets(outcomes)
    if "source" not in outcomes:
        outcomes = outcomes.assign(source="hand")
    by_set = {s: outcomes[outcomes["source"] == s] for s in sets}
    # decided on the first set with a question to score (hand-written ones all unanswerable: generated)
    sets = [s for s in sets if by_set[s]["answerable"].astype(bool).any()] or sets[:1]
    report = single_report(by_set[sets[0]], reported, provenance, invalid, same, counts, drawn, costs)
    report.verdict["questions"] = sets[0]
    others = sets[1:]
    if not others:
        return report
    tables, matrices = other_sets(
        {s: by_set[s] for s in others}, reported, counts, provenance.get("commit", ""), same
    )
    report.tables = {
        name: pd.concat([frame, tables[name]], ignore_index=True) for name, frame in report.tables.items()
    }
    matrices = {sets[0]: report.matrix} | matrices
    agreement = rank_agreement(matrices[sets[0]], matrices[others[0]])
    n = {s: int(by_set[s]["question_id"].nunique()) for s in matrices}
    section = side_by_side_md(matrices, n, agreement)
    report.verdict["agreement"] = agreement | {"sets": list(matrices)}
    report.markdown = report.markdown.replace(
        "\n## By question category",
        f"\n## {LABELS[sets[0]].capitalize()} and generated questions\n\n{section}\n\n## By question category",
        1,
    )
    report.matrix_md += f"\n\n{section}"
    return report
