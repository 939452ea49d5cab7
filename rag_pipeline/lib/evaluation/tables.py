"""The report's tables, computed from per-question outcomes: every configuration's metrics by k, recall
within character budgets and by category, first evidence ranks, the paired comparison with a
baseline, and the configuration matrix. Rendering (Markdown, plots) is `lib/report.py`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_pipeline.lib.evaluation.confirmation import FIGURES, MATRIX_COLUMNS, dev_order, split_table
from rag_pipeline.lib.evaluation.metrics import (
    HEADLINE,
    HEADLINE_BUDGET,
    MAX_K,
    REPORT_KS,
    budget_recall,
    category_recall,
    context_recall,
    first_ranks_of,
    hits_within,
    summarize,
)
from rag_pipeline.lib.evaluation.plots import configuration_name
from rag_pipeline.lib.evaluation.significance import paired_randomization
from rag_pipeline.lib.retrieval import RetrievalSettings, parse_retriever

run_label = configuration_name
# question_ranks.parquet's columns after the run's
RANK_COLUMNS = ["question_id", "category", "answerable", "split", "note_rank", "first_evidence_rank"]


@dataclass(frozen=True)
class Reported:
    """What a report is of: the configurations (`run_keys` name their columns), the retrieval
    settings they ran under, the baseline run (strategy, retriever) and the run the verdict keeps as
    its choice (RAG_CHOSEN_RUN; None: it chooses on the development questions)."""

    run_keys: list[str]
    settings: RetrievalSettings
    baseline: tuple[str, str]
    kept: tuple[str, str] | None = None


@dataclass
class Tables:
    summary: pd.DataFrame
    budget: pd.DataFrame
    category: pd.DataFrame
    ranks: pd.DataFrame
    compared: pd.DataFrame
    splits: pd.DataFrame
    matrix: pd.DataFrame

    def named(self) -> dict[str, pd.DataFrame]:
        """The tables written under reports/, by file name."""
        return {
            "evaluation_summary": self.summary,
            "question_ranks": self.ranks,
            "budget_recall": self.budget,
            "category_recall": self.category,
            "comparison": self.compared,
            "splits": self.splits,
        }


def compute_tables(
    outcomes: pd.DataFrame, reported: Reported, *, counts: dict[str, int], commit: str
) -> Tables:
    run_keys, settings, baseline = reported.run_keys, reported.settings, reported.baseline
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
    summary = pd.concat(summaries, ignore_index=True).assign(**counts, commit=commit)
    summary = summary[run_keys + [c for c in summary.columns if c not in run_keys]]
    budget = pd.concat(budgets, ignore_index=True)
    category = pd.concat(categories, ignore_index=True)
    ranks = outcomes[[*run_keys, *RANK_COLUMNS]]
    compared = comparison(outcomes, run_keys, baseline, settings)
    splits = split_table(outcomes, run_keys, baseline)
    matrix = matrix_table(summary, budget, splits)
    return Tables(summary, budget, category, ranks, compared, splits, matrix)


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


def comparison(
    outcomes: pd.DataFrame, run_keys: list[str], baseline: tuple[str, str], settings: RetrievalSettings
) -> pd.DataFrame:
    """Each run against the baseline run on the same questions: evidence hit at `context_k` and hit
    within `context_chars` characters, the paired difference and its randomisation p-value."""
    k, chars = settings.context_k, settings.context_chars
    measures = (
        (f"evid@{k}", lambda o: first_ranks_of(o[o["answerable"].astype(bool)]) <= k),
        (f"evid@{chars}chars", lambda o: hits_within(o, chars)),
        (HEADLINE, lambda o: hits_within(o, HEADLINE_BUDGET)),
    )
    bases: dict[str, tuple[pd.DataFrame, dict[str, np.ndarray]]] = {}  # per embedding_version
    rows = []
    for keys, run in outcomes.groupby(run_keys, sort=False):
        if keys[2] not in bases:
            base = outcomes[
                (outcomes["strategy"] == baseline[0])
                & (outcomes["retriever"] == baseline[1])
                & (outcomes["embedding_version"] == keys[2])
            ]
            bases[keys[2]] = (
                base,
                {m: hits(base).astype(float) for m, hits in measures} if len(base) else {},
            )
        base, base_hits = bases[keys[2]]
        if base.empty:
            continue
        a = run.set_index("question_id").loc[base["question_id"]].reset_index()
        row = dict(zip(run_keys, keys)) | {"baseline": run_label(*baseline)}
        for measure, hits in measures:
            x, y = hits(a).astype(float), base_hits[measure]
            row |= {
                f"{measure}": x.mean(),
                f"{measure}_baseline": y.mean(),
                f"{measure}_delta": x.mean() - y.mean(),
                f"{measure}_p": paired_randomization(x, y),
            }
        rows.append(row)
    return pd.DataFrame(rows)


def matrix_table(summary: pd.DataFrame, budget: pd.DataFrame, splits: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration in the verdict's order (`dev_order`: best on the headline measure,
    evidence recall within HEADLINE_BUDGET characters, on the development questions, their MRR@10
    breaking ties); `dev` and `test` are the headline measure on each split, `Δ` and `p` compare it
    with the baseline on the test questions (`splits`: `split_table`'s rows; empty: ordered on all
    questions, no comparison). Every configuration's test figures are here: people read
    `shown_matrix`."""
    headline = HEADLINE
    rows = []
    for (strategy, retriever), run in summary.groupby(["strategy", "retriever"], sort=False):
        at = run.set_index("k")
        b = budget[(budget["strategy"] == strategy) & (budget["retriever"] == retriever)].set_index(
            "budget_chars"
        )
        c = (
            splits[(splits["strategy"] == strategy) & (splits["retriever"] == retriever)]
            if len(splits)
            else splits
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
            row |= c[FIGURES].rename(columns=MATRIX_COLUMNS).iloc[0].to_dict()
        rows.append(row)
    table = pd.DataFrame(rows).sort_values([headline, "mrr@10"], ascending=False, kind="stable")
    table = dev_order(table) if len(splits) else table
    return (
        table.drop(columns=["strategy", "retriever"])
        .assign(strategy=table["strategy"], retriever=table["retriever"])
        .reset_index(drop=True)
    )


TEST_COLUMNS = ("test", "test_baseline", "Δ", "p")


def shown_matrix(matrix: pd.DataFrame, chosen: str | None, baseline: str) -> pd.DataFrame:
    """The matrix as people read it: the test split's figures of the `chosen` configuration and the
    baseline only. A column of every configuration's test figure, each with its own uncorrected
    p-value, invites choosing on the test questions after all."""
    kept = matrix["configuration"].isin([chosen, baseline])
    shown = matrix.assign(**{c: matrix[c].where(kept) for c in TEST_COLUMNS if c in matrix})
    if "p" in shown:  # an exact p-value can be 1e-08: two significant digits, not two decimals
        shown["p"] = [f"{p:.2g}" if p == p else "" for p in shown["p"]]
    return shown


def glance_tables(
    matrix: pd.DataFrame, category: pd.DataFrame, baseline: str, chosen: str | None = None
) -> dict[str, pd.DataFrame]:
    """The two tables a person reads first, narrow enough for a laptop's metadata column: the top
    five configurations on the headline measure (on all questions, on the development and the test
    questions, with Δ and p against the baseline on the test questions, retrieval's p95 latency and
    cost per 1,000 questions), and recall@5 per question category of the `chosen` configuration
    (default: the first) beside the baseline's."""
    shown = ("configuration", HEADLINE, "dev", "test", "Δ", "p", "p95 ms", "cost/1k")
    top = matrix.head(5)[[c for c in shown if c in matrix]].copy()
    if "p" in top and pd.api.types.is_float_dtype(top["p"]):  # `shown_matrix` gives them as text
        top["p"] = [f"{p:.2g}" if p == p else "" for p in top["p"]]
    by_run = category.set_index("configuration")
    runs = {"best": chosen or str(matrix.iloc[0]["configuration"]), "baseline": baseline}
    per_category = pd.DataFrame(
        {"category": list(by_run.columns)}
        | {
            who: [by_run.loc[run, c] if run in by_run.index else float("nan") for c in by_run.columns]
            for who, run in runs.items()
        }
    )
    return {"top_configurations": top, "per_category": per_category}


def records(frame: pd.DataFrame, digits: int = 2) -> list[dict[str, object]]:
    """A small table's rows as JSON values, as a reader's table shows them: floats rounded, NaN empty."""

    def cell(value: object) -> object:
        if isinstance(value, float):
            return None if value != value else round(float(value), digits)
        return value.item() if hasattr(value, "item") else value

    return [{str(c): cell(v) for c, v in zip(frame.columns, row)} for row in frame.itertuples(index=False)]
