"""The evaluation report: the configuration matrix, the seed's table, per-category and per-question
tables, paired comparison with a baseline, and plots."""

from __future__ import annotations

import base64
import hashlib
import io
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING

import pandas as pd

from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.evaluation.budgets import Costs, budgeted_verdict, with_costs
from rag_pipeline.lib.evaluation.markdown import SHOWN, folded_md, key_md, provenance_md, to_markdown
from rag_pipeline.lib.evaluation.metrics import BASELINE_RUN, DEPTH, HEADLINE_BUDGET, question_counts
from rag_pipeline.lib.evaluation.plots import heatmap, pareto_plot, pareto_points, recall_grid
from rag_pipeline.lib.evaluation.tables import (
    RANK_COLUMNS,
    Reported,
    compute_tables,
    rank_table,
    reference_table,
    run_label,
    shown_matrix,
)
from rag_pipeline.lib.evaluation.verdict import verdict

if TYPE_CHECKING:
    import matplotlib.pyplot as plt

LABELS = {"hand": "hand-written", "generated": "generated"}  # the question sets (`source`)


def pyplot():
    """matplotlib's pyplot on the Agg backend, imported when a plot is first drawn (it takes seconds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: plt.Figure) -> bytes:
    plt = pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def recall_plots(summary: pd.DataFrame) -> tuple[bytes, bytes]:
    """(evidence recall against k, evidence recall against characters passed on a log scale)."""
    plt = pyplot()

    by_k, ax_k = plt.subplots(figsize=(6, 4))
    by_chars, ax_c = plt.subplots(figsize=(6, 4))
    for (strategy, retriever), run in summary.groupby(["strategy", "retriever"], sort=False):
        label = run_label(strategy, retriever)
        ax_k.plot(run["k"], run["evidence_recall"], marker="o", markersize=3, label=label)
        ax_c.plot(run["chars_median"], run["evidence_recall"], marker="o", markersize=3, label=label)
    ax_k.set(
        xlabel="k (chunks passed)", ylabel="evidence recall@k", ylim=(0, 1.02), xticks=[1, 5, 10, 15, 20]
    )
    ax_c.set(xlabel="characters passed (median, log scale)", ylabel="evidence recall", ylim=(0, 1.02))
    ax_c.set_xscale("log")
    for ax in (ax_k, ax_c):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _png(by_k), _png(by_chars)


def inline_png(png: bytes, alt: str) -> str:
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"


@dataclass
class Report:
    tables: dict[str, pd.DataFrame]
    plots: dict[str, bytes]
    matrix: pd.DataFrame
    matrix_md: str
    reference_md: str
    category_md: str
    ranks_md: str
    plots_md: str
    markdown: str
    verdict: dict
    drawn: dict[str, tuple[bytes, ...]] = field(default_factory=dict)  # the plots by what they draw
    category: pd.DataFrame = field(
        default_factory=pd.DataFrame
    )  # evidence recall@5 per configuration and category


class Drawn:
    """Plots by a digest of the function's code (its fingerprint) and everything it draws from
    (matplotlib's version too):
    a report whose plotted numbers did not change takes its PNGs from `known` rather than
    rendering them again (matplotlib is most of a report's cost). `used` is what this report drew."""

    def __init__(self, known: dict[str, tuple[bytes, ...]]):
        self.known, self.used = known, {}

    def __call__(self, render: Callable[..., bytes | tuple[bytes, ...]], *args: object) -> tuple[bytes, ...]:
        """`render(*args)`'s PNGs as a tuple, rendered only when not known."""
        what = (fingerprint([render]), metadata.version("matplotlib"), args)
        key = hashlib.sha256(pickle.dumps(what, protocol=5)).hexdigest()
        if key not in self.known:
            made = render(*args)
            self.known[key] = made if isinstance(made, tuple) else (made,)
        self.used[key] = self.known[key]
        return self.used[key]


def nothing_to_score(
    outcomes: pd.DataFrame,
    run_keys: list[str],
    provenance: dict[str, str],
    invalid: dict[str, str],
    counts: dict[str, int],
) -> Report:
    """The report of a question set with no answerable question: counts, and no metric."""
    table = pd.DataFrame(
        [
            dict(zip(run_keys, keys)) | {"n_chunks": int(run["n_chunks"].iloc[0])} | question_counts(run)
            for keys, run in outcomes.groupby(run_keys, sort=False)
        ]
    ).assign(n_questions=0, **counts, commit=provenance.get("commit", ""), same_chunks_as="")
    text = (
        f"No answerable question: nothing to score ({len(outcomes['question_id'].unique())} unanswerable "
        "question(s) kept apart)."
    )
    markdown = f"# Retrieval evaluation\n\n{provenance_md(provenance, invalid)}\n\n{text}\n"
    ranks = outcomes[[*run_keys, *RANK_COLUMNS]]
    return Report(
        {"evaluation_summary": table, "question_ranks": ranks},
        {},
        pd.DataFrame(),
        text,
        "",
        "",
        "",
        "",
        markdown,
        verdict(pd.DataFrame(), ""),
    )


def single_report(
    outcomes: pd.DataFrame,
    reported: Reported,
    provenance: dict[str, str],
    invalid: dict[str, str],
    same: dict[str, str],
    counts: dict[str, int],
    drawn: dict[str, tuple[bytes, ...]] | None,
    costs: Costs | None = None,
) -> Report:
    """The report of one question set (`source`): every table over every configured strategy
    (`evaluation_summary` says in `same_chunks_as` which strategy's chunks a strategy shares), every
    row tagged with the set; the tables people read, the plots and the verdict fold a strategy with
    the same chunks as another into it, and say so. `drawn`: the last report's `Report.drawn`, plots
    not rendered again when what they draw is the same; `costs` each configuration's latency and cost
    (the verdict chooses within their budgets)."""
    run_keys, settings, baseline = reported.run_keys, reported.settings, reported.baseline
    source = str(outcomes["source"].iloc[0])
    if not outcomes["answerable"].astype(bool).any():
        report = nothing_to_score(outcomes, run_keys, provenance, invalid, counts)
        report.tables = {name: frame.assign(source=source) for name, frame in report.tables.items()}
        return report
    tables = compute_tables(outcomes, reported, counts=counts, commit=provenance.get("commit", ""))
    tables.summary["same_chunks_as"] = tables.summary["strategy"].map(same).fillna("")
    kept = ~tables.summary["strategy"].isin(list(same))
    summary, budget, category, ranks = (
        tables.summary[kept],
        tables.budget[~tables.budget["strategy"].isin(list(same))],
        tables.category[~tables.category["strategy"].isin(list(same))],
        tables.ranks[~tables.ranks["strategy"].isin(list(same))],
    )
    matrix = with_costs(
        tables.matrix[~tables.matrix["strategy"].isin(list(same))].reset_index(drop=True), costs
    )
    # the run kept as chosen, under the name the tables fold its strategy into
    chosen = (
        run_label(same.get(reported.kept[0], reported.kept[0]), reported.kept[1]) if reported.kept else None
    )
    judged = budgeted_verdict(matrix, run_label(*baseline), LABELS[source], costs, chosen)
    candidate_k = settings.candidate_k
    dense = summary[summary["retriever"] == BASELINE_RUN[1]]
    drawn = Drawn({} if drawn is None else drawn)
    plotted = dense[["strategy", "retriever", "k", "evidence_recall", "chars_median"]]
    by_k, by_chars = drawn(recall_plots, plotted)
    (pareto_png,) = drawn(pareto_plot, pareto_points(summary, budget))
    title = f"Evidence recall within {HEADLINE_BUDGET:,} characters, by chunking strategy and retriever"
    (heatmap_png,) = drawn(heatmap, recall_grid(budget), title)
    best = matrix[matrix["configuration"] == judged["best"][0]].iloc[0] if judged["best"] else matrix.iloc[0]
    cat = category[category["k"] == 5].assign(
        run=lambda f: [run_label(s, r) for s, r in zip(f["strategy"], f["retriever"])]
    )
    cat_wide = cat.pivot_table(
        index="run", columns="category", values="evidence_recall", sort=False
    ).reset_index()
    order = list(matrix["configuration"])
    cat_wide = cat_wide.set_index("run").loc[[r for r in order if r in set(cat_wide["run"])]].reset_index()
    n_cat = category[category["k"] == 5].groupby("category")["n_questions"].first()
    cat_wide.columns = ["configuration"] + [f"{c} ({n_cat[c]})" for c in cat_wide.columns[1:]]
    shown = ranks[
        (ranks["retriever"] == BASELINE_RUN[1])
        | ranks["retriever"].eq(best["retriever"]) & ranks["strategy"].eq(best["strategy"])
    ]

    at_k = summary[summary["k"] == settings.context_k]
    header = (
        f"{int(summary['n_questions'].iloc[0])} answerable questions "
        f"({int(summary['n_unanswerable'].iloc[0])} unanswerable and "
        f"{int(summary['n_unauthorized'].iloc[0])} unauthorized kept apart); "
        f"access at k={settings.context_k}: {int(at_k['leaked_units'].sum())} units leaked to an asker who "
        f"may not read them, at most {at_k['underfilled'].max():.2f} of the questions under-filled; "
        f"BM25 analyzer `{summary['analyzer'].iloc[0]}`; candidate_k {candidate_k}; what reaches the LLM "
        f"(context): the first {settings.context_k} units within {settings.context_chars:,} characters; "
        f"{judged['n_dev']} development and {judged['n_test']} test questions"
    )
    folds = f"\n\n{folded_md(same)}" if same else ""
    readable = shown_matrix(matrix, judged["best"][0] if judged["best"] else None, judged["baseline"])
    matrix_md = (
        f"{header}{folds}\n\n{to_markdown(readable[[c for c in SHOWN if c in readable]])}\n\n{key_md()}"
    )
    reference_md = to_markdown(reference_table(summary))
    category_md = (
        "Evidence recall@5 by question category (questions per category in brackets).\n\n"
        + to_markdown(cat_wide)
    )
    ranks_md = to_markdown(rank_table(shown))
    misses = []
    for label, (strategy, retriever) in (
        ("baseline", baseline),
        ("best", (best["strategy"], best["retriever"])),
    ):
        run = ranks[(ranks["strategy"] == strategy) & (ranks["retriever"] == retriever) & ranks["answerable"]]
        missed = run[run["first_evidence_rank"].isna() | (run["first_evidence_rank"] > 5)]
        listed = ", ".join(
            f"{q} ({'-' if pd.isna(r) else int(r)})"
            for q, r in zip(missed["question_id"], missed["first_evidence_rank"])
        )
        misses.append(f"- {label} `{run_label(strategy, retriever)}`: {listed or 'none'}")
    plots_md = (
        inline_png(pareto_png, f"recall within {HEADLINE_BUDGET:,} characters against characters passed")
        + "\n\n"
        + inline_png(heatmap_png, f"recall within {HEADLINE_BUDGET:,} characters by strategy and retriever")
        + "\n\n"
        + inline_png(by_k, "evidence recall against k (dense)")
        + "\n\n"
        + inline_png(by_chars, "evidence recall against characters passed (dense)")
    )
    markdown = (
        "# Retrieval evaluation\n\n"
        f"**{judged['wording']}**\n\n"
        f"{provenance_md(provenance, invalid)}\n\n"
        f"{matrix_md}\n\n"
        "![which configuration](which_configuration.png)\n![recall by strategy and retriever](recall_heatmap.png)\n\n"
        f"## By question category\n\n{category_md}\n\n"
        f"## Questions missed in the top 5 (rank of the first evidence, - = not in the top {DEPTH})\n\n"
        + "\n".join(misses)
        + "\n\n## The reference experiment's table (dense retrieval)\n\n"
        f"{reference_md}\n\n"
        "![evidence recall against k](recall_at_k.png)\n![evidence recall against characters passed]"
        "(recall_vs_chars.png)\n\n## Rank of the first chunk holding the evidence (- = not in top 20)\n\n"
        f"{ranks_md}\n"
    )
    return Report(
        tables={name: frame.assign(source=source) for name, frame in tables.named().items()},
        plots={
            "which_configuration": pareto_png,
            "recall_heatmap": heatmap_png,
            "recall_at_k": by_k,
            "recall_vs_chars": by_chars,
        },
        matrix=matrix,
        matrix_md=matrix_md,
        reference_md=reference_md,
        category_md=category_md,
        ranks_md=ranks_md,
        plots_md=plots_md,
        markdown=markdown,
        verdict=judged,
        drawn=drawn.used,
        category=cat_wide,
    )
