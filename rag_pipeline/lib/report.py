"""The evaluation report: the seed's side-by-side table, the per-question rank table, two plots."""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from rag_pipeline.lib.metrics import REPORT_KS


def run_label(strategy: str, retriever: str) -> str:
    return strategy if retriever == "dense" else f"{strategy}/{retriever}"


def seed_table(summary: pd.DataFrame) -> pd.DataFrame:
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
    """Questions as rows, runs as columns, the first evidence rank in each cell ('-' = not in top 20)."""
    answerable = question_ranks[question_ranks["answerable"]].copy()
    answerable["run"] = [run_label(s, r) for s, r in zip(answerable["strategy"], answerable["retriever"])]
    wide = answerable.pivot_table(
        index="question_id", columns="run", values="first_evidence_rank", aggfunc="first", sort=False
    )
    wide = wide.reindex(columns=list(dict.fromkeys(answerable["run"])))
    return wide.apply(lambda col: col.map(lambda v: "-" if pd.isna(v) else str(int(v)))).reset_index()


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
