"""The report's Markdown: short tables that fit a page with a key to their columns, the provenance
lines, and the summary that leads with the verdict."""

from __future__ import annotations

import pandas as pd

from rag_pipeline.lib.evaluation.metrics import HEADLINE, HEADLINE_BUDGET

# the configuration table everyone reads (the terminal, the UI, report.md); the Parquet has the rest
SHOWN = ["configuration", "chunks", "evid@1", "evid@5", "mrr@10", "chars@5", "context"]
SHOWN += ["r@1k", "r@2k", "r@4k", "dev", "test", "Δ", "p", "p95 ms", "cost/1k"]
COLUMN_KEY = {
    "configuration": "strategy/retriever; a strategy alone means dense retrieval",
    "chunks": "chunks in the strategy's index",
    "evid@k": "share of answerable questions with a unit holding an evidence in the top k",
    "mrr@10": "mean of 1/rank of the first evidence (0 past rank 10)",
    "chars@5": "median characters of the top 5 units",
    "context": "evidence among what would reach the LLM: context_k units within context_chars",
    "r@Nk": f"evidence recall within a budget of N,000 characters; r@{HEADLINE_BUDGET // 1000}k is the headline",
    "dev": f"r@{HEADLINE_BUDGET // 1000}k on the development questions, which order the table and choose",
    "test": f"r@{HEADLINE_BUDGET // 1000}k on the test questions, which confirm the choice: shown for the "
    "chosen configuration and the baseline only (another's would invite choosing on the test questions; "
    "`splits.parquet` has them all)",
    "Δ": "test minus the baseline's test, on the same test questions",
    "p": "the exact paired test's p-value of Δ (McNemar's: hits and misses per question)",
    "p95 ms": "95th percentile over the questions of retrieval's latency per question on the served table "
    "(query embedded, searched, reranked), in milliseconds",
    "cost/1k": "what retrieving for 1,000 questions costs at the prices of RAG_PRICES, in their currency "
    "(?: unpriced)",
}


def to_markdown(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table (pandas' own needs the optional `tabulate`)."""

    def cell(v: object) -> str:  # NaN: an empty cell
        return ("" if v != v else f"{v:.2f}") if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def key_md() -> str:
    return "Key: " + "; ".join(f"`{name}` {meaning}" for name, meaning in COLUMN_KEY.items()) + "."


def short(identifier: str, length: int = 28) -> str:
    """A long identifier (an embedding_version, an llm_version) as it fits a table cell; the full one
    is in the provenance."""
    return identifier if len(identifier) <= length else identifier[: length - 1] + "…"


def folded_md(same: dict[str, str]) -> str:
    return " ".join(
        f"`{dup}` has exactly the chunks of `{kept}`: shown once, as `{kept}`." for dup, kept in same.items()
    )


def provenance_md(provenance: dict[str, str], invalid: dict[str, str]) -> str:
    """The lines every report starts with: what it was computed from, and the questions left out."""
    lines = [f"- {key}: `{value}`" for key, value in provenance.items()]
    if invalid:
        lines.append(f"- n_invalid: {len(invalid)} question(s) left out for bad gold labels:")
        lines += [f"  - question {qid}: {why}" for qid, why in invalid.items()]
    return "Computed from:\n\n" + "\n".join(lines)


def plain(text: str) -> str:
    """Markdown's code marks dropped: the text as a plain table cell shows it."""
    return text.replace("`", "")


def headline_md(verdict: dict, matrix: pd.DataFrame, same: dict[str, str]) -> str:
    """What a reader needs beside the verdict and the top configurations: the baseline, the folded
    strategies and the key to the column names."""
    lines = []
    base = matrix[matrix["configuration"] == verdict["baseline"]]
    if not base.empty:
        b = base.iloc[0]
        lines.append(
            f"Baseline `{b['configuration']}`: {b[HEADLINE]:.2f} within {HEADLINE_BUDGET:,} characters, "
            f"{b['evid@5']:.2f} at k=5, MRR@10 {b['mrr@10']:.2f}."
        )
    if same:
        lines.append(folded_md(same))
    return "\n\n".join([*lines, key_md()])
