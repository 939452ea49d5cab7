"""From verdicts to figures: per item, then `reports/judged_summary.parquet` (a contract), the lines
`make run` prints for the served run, and the per-question scores the ledger and the gate read."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from rag_pipeline.lib.judging.items import KEY
from rag_pipeline.lib.judging.rubric import CRITERIA, INVALID, YES
from rag_pipeline.lib.judging.stats import NAN, cohen_kappa, ppi_mean, spearman

JUDGED = [*KEY, "judge_version", "criterion"]
RUN = ["strategy", "retriever", "llm_version", "judge_version", "criterion"]
SUMMARY_COLUMNS = [
    *RUN,
    "n",
    "judge_mean",
    "repeat_agreement",
    "n_invalid",
    "n_labels",
    "kappa",
    "ppi_mean",
    "ppi_low",
    "ppi_high",
    "position_flip_rate",
    "length_rho",
]


def item_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Per item and criterion (`JUDGED`): `score`, the share of its valid repeats saying yes (NaN
    when none is valid); `agree`, whether its valid repeats all agree (NA when none is valid);
    `n_invalid`, its invalid verdicts."""
    frame = rows.assign(
        yes=(rows["verdict"] == YES).astype(int), valid=(rows["verdict"] != INVALID).astype(int)
    )
    out = frame.groupby(JUDGED, sort=False).agg(
        n_yes=("yes", "sum"), n_valid=("valid", "sum"), n=("yes", "size")
    )
    out = out.reset_index()
    any_valid = out["n_valid"] > 0
    out["score"] = (out["n_yes"] / out["n_valid"]).where(any_valid)
    agree = (out["n_yes"] == 0) | (out["n_yes"] == out["n_valid"])
    out["agree"] = pd.array(agree.where(any_valid).tolist(), dtype="boolean")
    out["n_invalid"] = out["n"] - out["n_valid"]
    return out[[*JUDGED, "score", "agree", "n_invalid"]]


def judged_summary(
    scores: pd.DataFrame, items: pd.DataFrame, flips: Mapping[tuple[str, str, str], float]
) -> pd.DataFrame:
    """One row per run, judge and criterion. `scores` from `item_scores`; `items` the judged items
    with their people's labels (`attach_labels`) and answers; `flips` from `position_flips`.

    n: items; judge_mean: mean score; repeat_agreement: share of items whose valid repeats agree;
    n_invalid: invalid verdicts; n_labels: labelled items with a valid score; kappa: Cohen's kappa of
    the judge's majority (ties left out) and the labels; ppi_*: `ppi_mean`; position_flip_rate
    (faithful only); length_rho: Spearman's rho of the answer's characters and the score."""
    rows = []
    for (strategy, retriever, llm, judge, criterion), group in scores.groupby(RUN, sort=False):
        merged = group.merge(items, on=KEY, how="left", validate="one_to_one")
        score = merged["score"].to_numpy(dtype=float)
        label = merged[f"{criterion}_label"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
        both = ~np.isnan(score) & ~np.isnan(label) & (score != 0.5)
        estimate = ppi_mean(score, label)
        rows.append(
            {
                "strategy": strategy,
                "retriever": retriever,
                "llm_version": llm,
                "judge_version": judge,
                "criterion": criterion,
                "n": len(merged),
                "judge_mean": float(np.nanmean(score)) if (~np.isnan(score)).any() else NAN,
                "repeat_agreement": float(merged["agree"].dropna().astype(bool).mean())
                if merged["agree"].notna().any()
                else NAN,
                "n_invalid": int(merged["n_invalid"].sum()),
                "n_labels": int((~np.isnan(score) & ~np.isnan(label)).sum()),
                "kappa": cohen_kappa(score[both] > 0.5, label[both] > 0.5) if both.any() else NAN,
                "ppi_mean": estimate.mean,
                "ppi_low": estimate.low,
                "ppi_high": estimate.high,
                "position_flip_rate": flips.get((strategy, retriever, llm), NAN)
                if criterion == "faithful"
                else NAN,
                "length_rho": spearman(merged["answer"].str.len().to_numpy(dtype=float), score),
            }
        )
    frame = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return frame.astype({"n": "int64", "n_invalid": "int64", "n_labels": "int64"})


def criterion_line(row: pd.Series) -> str:
    """`faithful 0.82 [0.74, 0.90] (PPI, 50 labels), judge repeats agree on 71%`; without labels the
    judge's mean, said to be uncorrected."""
    if row["n_labels"] and not pd.isna(row["ppi_mean"]):
        labels = f"{row['n_labels']} label{'s' if row['n_labels'] != 1 else ''}"
        interval = "" if pd.isna(row["ppi_low"]) else f" [{row['ppi_low']:.2f}, {row['ppi_high']:.2f}]"
        figure = f"{row['ppi_mean']:.2f}{interval} (PPI, {labels}; the judge said {row['judge_mean']:.2f})"
    else:
        figure = f"{row['judge_mean']:.2f} (the judge's, uncorrected: no people's labels)"
    agree = "n/a" if pd.isna(row["repeat_agreement"]) else f"{row['repeat_agreement']:.0%}"
    invalid = f", {row['n_invalid']} verdict(s) invalid" if row["n_invalid"] else ""
    return f"{row['criterion']} {figure}, judge repeats agree on {agree}{invalid}"


def served_lines(summary: pd.DataFrame, run: str) -> list[str]:
    """One line per criterion of the run `strategy/retriever` (none when it was not judged)."""
    strategy, _, retriever = run.partition("/")
    mine = summary[(summary["strategy"] == strategy) & (summary["retriever"] == retriever)]
    order = {c: n for n, c in enumerate(CRITERIA)}
    mine = mine.sort_values("criterion", key=lambda c: c.map(order), kind="stable")
    return [criterion_line(row) for _, row in mine.iterrows()]


def question_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Per item (`KEY` and judge_version), one score column per criterion (NaN: no valid verdict)."""
    wide = scores.set_index([*KEY, "judge_version", "criterion"])["score"].unstack("criterion")
    wide = wide.reindex(columns=list(CRITERIA)).reset_index()
    wide.columns.name = None
    return wide


SHORT = {"judge_mean": "judge", "repeat_agreement": "agree", "n_invalid": "invalid"}
SHORT |= {"n_labels": "labels", "kappa": "kappa", "ppi_mean": "PPI", "ppi_low": "low", "ppi_high": "high"}
SHORT |= {"position_flip_rate": "flips", "length_rho": "len rho"}
SHORT_KEY = (
    "Key: `judge` share of the judge's valid repeats saying yes, averaged over answers; `agree` answers "
    "whose repeats all agree; `invalid` replies that were not one JSON verdict; `labels` people's labels "
    "used; `kappa` Cohen's kappa of judge and people; `PPI` [`low`, `high`] the mean corrected by the "
    "labels and its 95% interval (empty: no labels, the judge's figures are uncorrected); `flips` "
    "faithful verdicts changed by reversing the passages; `len rho` Spearman's rho of answer length "
    "and score."
)


def judged_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as people read it: one `run` column, short names, no versions (in the metadata)."""
    runs = [f"{s}/{r}" for s, r in zip(summary["strategy"], summary["retriever"])]
    shown = summary[["criterion", "n", *SHORT]].rename(columns=SHORT)
    return shown.assign(run=runs)[["run", "criterion", "n", *SHORT.values()]]
