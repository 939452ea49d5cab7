"""The evaluation report: the configuration matrix, the seed's table, per-category and per-question
tables, paired comparison with a baseline, and plots."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from rag_pipeline.lib.metrics import (
    MAX_K,
    REPORT_KS,
    budget_recall,
    category_recall,
    context_recall,
    first_ranks_of,
    hits_within,
    paired_randomization,
    summarize,
)
from rag_pipeline.lib.plots import configuration_name, heatmap, pareto_plot, pareto_points, recall_grid
from rag_pipeline.lib.retrievers import RetrievalSettings, parse_retriever

run_label = configuration_name

COLUMN_KEY = {
    "configuration": "strategy/retriever; a strategy alone means dense retrieval",
    "chunks": "chunks in the strategy's index",
    "evid@k": "share of answerable questions with a unit holding an evidence in the top k",
    "mrr@10": "mean of 1/rank of the first evidence (0 past rank 10)",
    "ndcg@10": "binary-gain nDCG at 10",
    "chars@5": "median characters of the top 5 units",
    "candidates": "evidence in the top candidate_k of the run's inputs (a fusion's ceiling)",
    "context": "evidence among what would reach the LLM: context_k units within context_chars",
    "r@Nk": "evidence recall within a budget of N,000 characters",
    "Δevid@5": "evid@5 minus the baseline's, on the same questions",
    "p": "paired randomisation p-value of that difference (10,000 sign flips)",
}


def headline_md(matrix: pd.DataFrame, baseline: tuple[str, str], duplicates: dict[str, str]) -> str:
    """What the page shows first: the best configurations, the baseline, and a key to every column."""
    best = matrix.iloc[0]
    base = matrix[matrix["configuration"] == run_label(*baseline)]
    top = matrix.drop(columns=["strategy", "retriever"]).head(5)
    lines = [
        f"**Best: `{best['configuration']}`**: evidence recall {best['r@4k']:.2f} within 4,000 characters, "
        f"{best['evid@5']:.2f} at k=5, MRR@10 {best['mrr@10']:.2f}."
    ]
    if not base.empty:
        b = base.iloc[0]
        lines.append(
            f"Baseline `{b['configuration']}`: {b['r@4k']:.2f} within 4,000 characters, {b['evid@5']:.2f} at k=5."
        )
    lines += [
        f"`{dup}` has exactly the chunks of `{kept}`: reported once, as `{kept}`."
        for dup, kept in duplicates.items()
    ]
    key = "\n".join(f"- `{name}`: {meaning}" for name, meaning in COLUMN_KEY.items())
    return "\n\n".join([*lines, "Top configurations:", to_markdown(top), f"Key:\n\n{key}"])


def reference_table(summary: pd.DataFrame) -> pd.DataFrame:
    """strategy, chunks, note@1/3/5/10, evid@1/3/5/10, chars@5 - one row per run."""
    rows = []
    for (strategy, retriever), run in summary.groupby(["strategy", "retriever"], sort=False):
        at = run.set_index("k")
        row = {"strategy": run_label(strategy, retriever), "chunks": int(run["n_chunks"].iloc[0])}
        row |= {f"note@{k}": at.at[k, "note_recall"] for k in REPORT_KS}
        row |= {f"evid@{k}": at.at[k, "evidence_recall"] for k in REPORT_KS}
        row["chars@5"] = int(at.at[5, "chars_median"])
        rows.append(row)
    return pd.DataFrame(rows)


def rank_table(question_ranks: pd.DataFrame) -> pd.DataFrame:
    """Questions as rows, runs as columns, the first evidence rank in each cell ('-' = not in the top 20)."""
    answerable = question_ranks[question_ranks["answerable"]].copy()
    answerable["run"] = [run_label(s, r) for s, r in zip(answerable["strategy"], answerable["retriever"])]
    answerable["rank"] = [
        "-" if pd.isna(v) or v > MAX_K else str(int(v)) for v in answerable["first_evidence_rank"]
    ]
    wide = answerable.pivot_table(
        index="question_id", columns="run", values="rank", aggfunc="first", sort=False
    )
    return wide.reindex(columns=list(dict.fromkeys(answerable["run"]))).reset_index()


def to_markdown(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table (pandas' own needs the optional `tabulate`)."""

    def cell(v: object) -> str:
        return f"{v:.2f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _png(fig: plt.Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def recall_plots(summary: pd.DataFrame) -> tuple[bytes, bytes]:
    """(evidence recall against k, evidence recall against characters passed on a log scale)."""
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


def candidate_recall(outcomes: pd.DataFrame, keys: tuple, run_keys: list[str], candidate_k: int) -> float:
    """Share of answerable questions whose evidence is in the top `candidate_k` of at least one of
    the run's inputs (the run itself for a base retriever, both inputs for a fusion)."""
    strategy, retriever, version = keys
    inputs = parse_retriever(retriever).inputs
    pool = outcomes[
        (outcomes["strategy"] == strategy)
        & (outcomes["embedding_version"] == version)
        & outcomes["retriever"].isin(inputs)
        & outcomes["answerable"].astype(bool)
    ]
    if pool["retriever"].nunique() < len(inputs):
        return float("nan")
    hit = pool.assign(hit=first_ranks_of(pool) <= candidate_k).groupby("question_id")["hit"].any()
    return float(hit.mean())


def comparison(outcomes: pd.DataFrame, run_keys: list[str], baseline: tuple[str, str]) -> pd.DataFrame:
    """Each run against the baseline run on the same questions: evidence hit@5 and hit within 4,000
    characters, the paired difference and its randomisation p-value."""
    rows = []
    for keys, run in outcomes.groupby(run_keys, sort=False):
        base = outcomes[
            (outcomes["strategy"] == baseline[0])
            & (outcomes["retriever"] == baseline[1])
            & (outcomes["embedding_version"] == keys[2])
        ]
        if base.empty:
            continue
        a = run.set_index("question_id").loc[base["question_id"]].reset_index()
        row = dict(zip(run_keys, keys)) | {"baseline": run_label(*baseline)}
        for measure, hits in (
            ("evid@5", lambda o: first_ranks_of(o[o["answerable"].astype(bool)]) <= 5),
            ("evid@4000chars", lambda o: hits_within(o, 4000)),
        ):
            x, y = hits(a).astype(float), hits(base).astype(float)
            row |= {
                f"{measure}": x.mean(),
                f"{measure}_baseline": y.mean(),
                f"{measure}_delta": x.mean() - y.mean(),
                f"{measure}_p": paired_randomization(x, y),
            }
        rows.append(row)
    return pd.DataFrame(rows)


def provenance_md(provenance: dict[str, str], invalid: dict[str, str]) -> str:
    """The lines every report starts with: what it was computed from, and the questions left out."""
    lines = [f"- {key}: `{value}`" for key, value in provenance.items()]
    if invalid:
        lines.append(f"- n_invalid: {len(invalid)} question(s) left out for bad gold labels:")
        lines += [f"  - question {qid}: {why}" for qid, why in invalid.items()]
    return "Computed from:\n\n" + "\n".join(lines)


def nothing_to_score(
    outcomes: pd.DataFrame, run_keys: list[str], provenance: dict[str, str], invalid: dict[str, str]
) -> Report:
    """The report of a question set with no answerable question: counts, and no metric."""
    counts = (
        outcomes.groupby(run_keys, sort=False)
        .agg(n_chunks=("n_chunks", "first"), n_unanswerable=("answerable", "size"))
        .reset_index()
        .assign(n_questions=0, n_invalid=len(invalid), commit=provenance.get("commit", ""))
    )
    text = (
        f"No answerable question: nothing to score ({len(outcomes['question_id'].unique())} unanswerable "
        "question(s) kept apart)."
    )
    markdown = f"# Retrieval evaluation\n\n{provenance_md(provenance, invalid)}\n\n{text}\n"
    ranks = outcomes[[*run_keys, "question_id", "category", "answerable", "note_rank", "first_evidence_rank"]]
    return Report(
        {"evaluation_summary": counts, "question_ranks": ranks},
        {},
        pd.DataFrame(),
        text,
        "",
        "",
        "",
        "",
        markdown,
    )


def build_report(
    outcomes: pd.DataFrame,
    run_keys: list[str],
    settings: RetrievalSettings,
    baseline: tuple[str, str],
    provenance: dict[str, str],
    invalid: dict[str, str],
) -> Report:
    if not outcomes["answerable"].astype(bool).any():
        return nothing_to_score(outcomes, run_keys, provenance, invalid)
    candidate_k = settings.candidate_k
    summaries, budgets, categories = [], [], []
    for keys, run in outcomes.groupby(run_keys, sort=False):
        tag = dict(zip(run_keys, keys))
        summaries.append(
            summarize(run).assign(
                **tag,
                n_chunks=int(run["n_chunks"].iloc[0]),
                analyzer=run["analyzer"].iloc[0],
                candidate_recall=candidate_recall(outcomes, keys, run_keys, candidate_k),
                context_recall=context_recall(run, settings.context_k, settings.context_chars),
            )
        )
        budgets.append(budget_recall(run).assign(**tag))
        categories.append(category_recall(run).assign(**tag))
    summary = pd.concat(summaries, ignore_index=True).assign(
        n_invalid=len(invalid), commit=provenance.get("commit", "")
    )
    summary = summary[run_keys + [c for c in summary.columns if c not in run_keys]]
    budget = pd.concat(budgets, ignore_index=True)
    category = pd.concat(categories, ignore_index=True)
    ranks = outcomes[[*run_keys, "question_id", "category", "answerable", "note_rank", "first_evidence_rank"]]
    compared = comparison(outcomes, run_keys, baseline)

    matrix = matrix_table(summary, budget, compared)
    dense = summary[summary["retriever"] == "dense"]
    by_k, by_chars = recall_plots(dense)
    pareto_png = pareto_plot(pareto_points(summary, budget))
    heatmap_png = heatmap(
        recall_grid(budget), "Evidence recall within 4,000 characters, by chunking strategy and retriever"
    )
    best = matrix.iloc[0]
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
        (ranks["retriever"] == "dense")
        | ranks["retriever"].eq(best["retriever"]) & ranks["strategy"].eq(best["strategy"])
    ]

    header = (
        f"{int(summary['n_questions'].iloc[0])} answerable questions "
        f"({int(summary['n_unanswerable'].iloc[0])} unanswerable kept apart); "
        f"embedding_version {', '.join(f'`{v}`' for v in summary['embedding_version'].unique())}; "
        f"BM25 analyzer `{summary['analyzer'].iloc[0]}`; candidate_k {candidate_k}; what reaches the LLM "
        f"(context): the first {settings.context_k} units within {settings.context_chars:,} characters"
    )
    matrix_md = f"{header}\n\n{to_markdown(matrix)}"
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
        inline_png(pareto_png, "recall within 4,000 characters against characters passed")
        + "\n\n"
        + inline_png(heatmap_png, "recall within 4,000 characters by strategy and retriever")
        + "\n\n"
        + inline_png(by_k, "evidence recall against k (dense)")
        + "\n\n"
        + inline_png(by_chars, "evidence recall against characters passed (dense)")
    )
    markdown = (
        "# Retrieval evaluation\n\n"
        f"{provenance_md(provenance, invalid)}\n\n"
        f"{matrix_md}\n\n"
        "Columns: evidence recall at k, MRR@10 and nDCG@10 (binary gains), median characters passed at k=5, "
        f"candidate recall (evidence in the top {candidate_k} of the run's inputs), context recall (evidence "
        "among what would reach the LLM), recall within a budget of "
        "1k/2k/4k/8k characters, and the paired difference of evid@5 with the baseline "
        f"`{run_label(*baseline)}` (p: paired randomisation test, 10,000 sign flips).\n\n"
        "![which configuration](which_configuration.png)\n![recall by strategy and retriever](recall_heatmap.png)\n\n"
        f"## By question category\n\n{category_md}\n\n"
        "## Questions missed in the top 5 (rank of the first evidence, - = not in the top 50)\n\n"
        + "\n".join(misses)
        + "\n\n## The reference experiment's table (dense retrieval)\n\n"
        f"{reference_md}\n\n"
        "![evidence recall against k](recall_at_k.png)\n![evidence recall against characters passed]"
        "(recall_vs_chars.png)\n\n## Rank of the first chunk holding the evidence (- = not in top 20)\n\n"
        f"{ranks_md}\n"
    )
    return Report(
        tables={
            "evaluation_summary": summary,
            "question_ranks": ranks,
            "budget_recall": budget,
            "category_recall": category,
            "comparison": compared,
        },
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
    )


def matrix_table(summary: pd.DataFrame, budget: pd.DataFrame, compared: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration, best evidence recall within 4,000 characters first."""
    rows = []
    for (strategy, retriever), run in summary.groupby(["strategy", "retriever"], sort=False):
        at = run.set_index("k")
        b = budget[(budget["strategy"] == strategy) & (budget["retriever"] == retriever)].set_index(
            "budget_chars"
        )
        c = (
            compared[(compared["strategy"] == strategy) & (compared["retriever"] == retriever)]
            if len(compared)
            else compared
        )
        row = {
            "configuration": run_label(strategy, retriever),
            "strategy": strategy,
            "retriever": retriever,
            "chunks": int(run["n_chunks"].iloc[0]),
            "evid@1": at.at[1, "evidence_recall"],
            "evid@5": at.at[5, "evidence_recall"],
            "evid@10": at.at[10, "evidence_recall"],
            "mrr@10": at.at[10, "mrr"],
            "ndcg@10": at.at[10, "ndcg"],
            "chars@5": int(at.at[5, "chars_median"]),
            "candidates": run["candidate_recall"].iloc[0],
            "context": run["context_recall"].iloc[0],
        }
        row |= {f"r@{int(k) // 1000}k": b.at[k, "evidence_recall"] for k in b.index}
        if not c.empty:
            row |= {"Δevid@5": c["evid@5_delta"].iloc[0], "p": c["evid@5_p"].iloc[0]}
        rows.append(row)
    table = pd.DataFrame(rows).sort_values(["r@4k", "evid@5"], ascending=False, kind="stable")
    return (
        table.drop(columns=["strategy", "retriever"])
        .assign(strategy=table["strategy"], retriever=table["retriever"])
        .reset_index(drop=True)
    )
