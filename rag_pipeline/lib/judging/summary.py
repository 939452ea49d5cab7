"""From verdicts to figures: per item, then `reports/judged_summary.parquet` (a contract), the lines
`make run` prints for the served run, and the per-question scores the ledger and the gate read."""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd

from rag_pipeline.lib.judging.items import KEY
from rag_pipeline.lib.judging.judges import Flips
from rag_pipeline.lib.judging.rubric import CRITERIA, INVALID, YES
from rag_pipeline.lib.judging.stats import (
    MIN_LABELS,
    NAN,
    agreement,
    cohen_kappa,
    corrected_mean,
    spearman,
)

JUDGED = [*KEY, "judge_version", "criterion"]
RUN = ["strategy", "retriever", "llm_version", "judge_version", "criterion"]
SUMMARY_COLUMNS = [
    *RUN,
    "n",
    "judge_mean",
    "by_construction",
    "repeat_agreement",
    "n_invalid",
    "n_labels",
    "n_skipped",
    "agreement",
    "kappa",
    "ppi_mean",
    "ppi_low",
    "ppi_high",
    "headline",
    "ppi_lambda",
    "labels_mean",
    "labels_low",
    "labels_high",
    "position_flip_rate",
    "position_disagreement",
    "same_order_disagreement",
    "length_rho",
    "labels_length_rho",
]


def item_scores(rows: pd.DataFrame) -> pd.DataFrame:
    """Per item and criterion (`JUDGED`): `score`, the share of its valid repeats saying yes (NaN
    when none is valid); `agree`, whether its valid repeats all agree (NA with fewer than two valid:
    one verdict agrees with nothing); `n_invalid`, its invalid verdicts."""
    frame = rows.assign(
        yes=(rows["verdict"] == YES).astype(int), valid=(rows["verdict"] != INVALID).astype(int)
    )
    out = frame.groupby(JUDGED, sort=False).agg(
        n_yes=("yes", "sum"), n_valid=("valid", "sum"), n=("yes", "size")
    )
    out = out.reset_index()
    out["score"] = (out["n_yes"] / out["n_valid"]).where(out["n_valid"] > 0)
    agree = (out["n_yes"] == 0) | (out["n_yes"] == out["n_valid"])
    out["agree"] = pd.array(agree.where(out["n_valid"] > 1).tolist(), dtype="boolean")
    out["n_invalid"] = out["n"] - out["n_valid"]
    return out[[*JUDGED, "score", "agree", "n_invalid"]]


def people_figures(score: np.ndarray, label: np.ndarray, length: np.ndarray) -> dict[str, object]:
    """What people's labels make of one run's criterion (`judged_summary`'s columns): NaN throughout
    with fewer than `MIN_LABELS` labels."""
    corrected = corrected_mean(score, label)
    enough = int((~np.isnan(label)).sum()) >= MIN_LABELS
    # the judge's majority against the label, ties and items with no valid verdict left out
    both = ~np.isnan(score) & ~np.isnan(label) & (score != 0.5)
    judge, people = score[both] > 0.5, label[both] > 0.5
    chosen = corrected.chosen
    return {
        "agreement": agreement(judge, people) if enough else NAN,
        "kappa": cohen_kappa(judge, people) if enough else NAN,
        "ppi_mean": chosen.mean,
        "ppi_low": chosen.low,
        "ppi_high": chosen.high,
        "headline": corrected.headline,
        "ppi_lambda": corrected.lam,
        "labels_mean": corrected.labels.mean,
        "labels_low": corrected.labels.low,
        "labels_high": corrected.labels.high,
        "labels_length_rho": spearman(length, label) if enough else NAN,
    }


def judged_summary(
    scores: pd.DataFrame,
    items: pd.DataFrame,
    flips: Mapping[tuple[str, str, str], Flips],
    constructed: Collection[tuple[str, str]] = (),
    skipped: Mapping[tuple[str, str, str], int] | None = None,
) -> pd.DataFrame:
    """One row per run, judge and criterion. `scores` from `item_scores`; `items` the judged items
    with their people's labels (`attach_labels`) and answers; `flips` from `position_flips`;
    `constructed` the (llm_version, criterion) the judge passes by construction; `skipped` the labels
    file's skips per (strategy, retriever, criterion).

    n: items; judge_mean: mean score; by_construction: the judge passes every answer of this
    answerer on it; repeat_agreement: share of items with two valid repeats or more whose repeats
    agree; n_invalid: invalid verdicts; n_labels: labelled items (every one counts, whatever its
    judge reply); n_skipped; agreement and kappa: of the judge's majority (ties left out) and the
    labels; ppi_* the corrected mean with its 95% interval, the narrower of PPI++ (weight
    ppi_lambda) and the labels alone (labels_*), `headline` saying which; position_*: `Flips`
    (faithful only); length_rho and labels_length_rho: Spearman's rho of the answer's characters and
    the judge's score, and people's label."""
    skipped = skipped or {}
    rows = []
    for (strategy, retriever, llm, judge, criterion), group in scores.groupby(RUN, sort=False):
        merged = group.merge(items, on=KEY, how="left", validate="one_to_one")
        score = merged["score"].to_numpy(dtype=float)
        label = merged[f"{criterion}_label"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
        length = merged["answer"].str.len().to_numpy(dtype=float)
        flipped = flips.get((strategy, retriever, llm)) if criterion == "faithful" else None
        rows.append(
            {
                "strategy": strategy,
                "retriever": retriever,
                "llm_version": llm,
                "judge_version": judge,
                "criterion": criterion,
                "n": len(merged),
                "judge_mean": float(np.nanmean(score)) if (~np.isnan(score)).any() else NAN,
                "by_construction": (llm, criterion) in constructed,
                "repeat_agreement": float(merged["agree"].dropna().astype(bool).mean())
                if merged["agree"].notna().any()
                else NAN,
                "n_invalid": int(merged["n_invalid"].sum()),
                "n_labels": int((~np.isnan(label)).sum()),
                "n_skipped": skipped.get((strategy, retriever, criterion), 0),
                **people_figures(score, label, length),
                "position_flip_rate": flipped.rate if flipped else NAN,
                "position_disagreement": flipped.across if flipped else NAN,
                "same_order_disagreement": flipped.same if flipped else NAN,
                "length_rho": spearman(length, score),
            }
        )
    frame = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    ints = {"n": "int64", "n_invalid": "int64", "n_labels": "int64", "n_skipped": "int64"}
    return frame.astype(ints | {"by_construction": bool, "headline": str})


def _share(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value:.0%}"


def _people(row: pd.Series) -> str:
    """The corrected figure and what it rests on, or why there is none."""
    n = int(row["n_labels"])
    if n < MIN_LABELS:
        few = (
            f"too few people's labels ({n} of the {MIN_LABELS} a figure needs)" if n else "no people's labels"
        )
        return f"{row['judge_mean']:.2f} (the judge's, uncorrected: {few})"
    if row["headline"] == "labels only":
        how = "labels only: PPI++ was no narrower"
    else:
        how = f"PPI++, judge weight {row['ppi_lambda']:.2f}; the labels alone [{row['labels_low']:.2f}, {row['labels_high']:.2f}]"
    kappa = "n/a (one side said one thing throughout)" if pd.isna(row["kappa"]) else f"{row['kappa']:.2f}"
    return (
        f"{row['ppi_mean']:.2f} [{row['ppi_low']:.2f}, {row['ppi_high']:.2f}] ({how}; {n} labels; the "
        f"judge said {row['judge_mean']:.2f}, agreeing with people on "
        f"{_share(row['agreement'])}, kappa {kappa})"
    )


def criterion_line(row: pd.Series) -> str:
    """`faithful 0.82 [0.74, 0.90] (PPI++, the narrower; ...), judge repeats agree on 71%`; without
    enough labels the judge's mean, said to be uncorrected; a criterion passed by construction said
    so, with nothing else."""
    if row["by_construction"]:
        return (
            f"{row['criterion']} {row['judge_mean']:.2f} by construction: the {row['judge_version'].split('|')[0]} "
            "judge passes every answer of this answerer on it, so it measures nothing here"
        )
    agree = (
        "one valid repeat each: no repeat agreement"
        if pd.isna(row["repeat_agreement"])
        else f"judge repeats agree on {row['repeat_agreement']:.0%}"
    )
    invalid = f", {row['n_invalid']} verdict(s) invalid" if row["n_invalid"] else ""
    skipped = f", {row['n_skipped']} label(s) skipped" if row["n_skipped"] else ""
    flips = ""
    if not pd.isna(row["position_disagreement"]):
        net = (
            "n/a (one repeat: no same-order baseline)"
            if pd.isna(row["position_flip_rate"])
            else f"{row['position_flip_rate']:+.2f}"
        )
        flips = (
            f", reversing the passages changes {row['position_disagreement']:.0%} of verdicts against "
            f"{_share(row['same_order_disagreement'])} in the same order (position bias {net})"
        )
    return f"{row['criterion']} {_people(row)}, {agree}{invalid}{skipped}{flips}"


def served_lines(summary: pd.DataFrame, run: str) -> list[str]:
    """One line per criterion of the run `strategy/retriever` (none when it was not judged)."""
    strategy, _, retriever = run.partition("/")
    mine = summary[(summary["strategy"] == strategy) & (summary["retriever"] == retriever)]
    order = {c: n for n, c in enumerate(CRITERIA)}
    mine = mine.sort_values("criterion", key=lambda c: c.map(order), kind="stable")
    return [criterion_line(row) for _, row in mine.iterrows()]


def faithful_scores(
    rows: pd.DataFrame, items: pd.DataFrame, summary: pd.DataFrame, run: tuple[str, str]
) -> pd.DataFrame:
    """Per item of the run (strategy, retriever): its judge_version, `faithful` score and label
    (`faithful_label`, from `items`), as the release gate reads them. A score the judge gives by
    construction (`summary`'s `by_construction`: the rules on extractive answers) is none: no gate rule
    rests on a figure that measures nothing."""
    mine = rows[
        (rows["strategy"] == run[0]) & (rows["retriever"] == run[1]) & (rows["criterion"] == "faithful")
    ]
    scores = item_scores(mine).merge(items, on=KEY, how="left")
    built = summary[summary["by_construction"].astype(bool) & (summary["criterion"] == "faithful")]
    scores.loc[scores["llm_version"].isin(set(built["llm_version"])), "score"] = NAN
    return scores.rename(columns={"score": "faithful"})


def question_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Per item (`KEY` and judge_version), one score column per criterion (NaN: no valid verdict)."""
    wide = scores.set_index([*KEY, "judge_version", "criterion"])["score"].unstack("criterion")
    wide = wide.reindex(columns=list(CRITERIA)).reset_index()
    wide.columns.name = None
    return wide


SHORT = {"judge_mean": "judge", "by_construction": "built", "repeat_agreement": "agree"}
SHORT |= {
    "n_invalid": "invalid",
    "n_labels": "labels",
    "n_skipped": "skipped",
    "agreement": "agree w/ people",
}
SHORT |= {"kappa": "kappa", "ppi_mean": "corrected", "ppi_low": "low", "ppi_high": "high", "headline": "by"}
SHORT |= {"position_flip_rate": "flips", "same_order_disagreement": "noise"}
SHORT |= {"length_rho": "len rho", "labels_length_rho": "labels' len rho"}
SHORT_KEY = (
    "Key: `judge` share of the judge's valid repeats saying yes, averaged over answers; `built` true by "
    "construction (the judge passes every answer of this answerer: the figure measures nothing); `agree` "
    "answers whose repeats (two valid or more) all agree; `invalid` replies that were not one JSON "
    "verdict; `labels` people's labels used, `skipped` shown and skipped; `agree w/ people` and `kappa` "
    "of the judge's majority and the labels (kappa empty when either side said one thing throughout); "
    f"`corrected` [`low`, `high`] the mean corrected by the labels and its 95% interval, `by` PPI++ or "
    f"the labels only, whichever interval is narrower (empty: fewer than {MIN_LABELS} labels, the "
    "judge's figures are uncorrected); `flips` faithful verdicts changed by reversing the passages, net "
    "of `noise`, the share changed by asking again in the same order; `len rho` Spearman's rho of answer "
    "length and the judge's score, `labels' len rho` of answer length and people's labels (a judge's "
    "rho well above the labels' is a length bias)."
)


def judged_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as people read it: one `run` column, short names, no versions (in the metadata)."""
    runs = [f"{s}/{r}" for s, r in zip(summary["strategy"], summary["retriever"])]
    shown = summary[["criterion", "n", *SHORT]].rename(columns=SHORT)
    shown["built"] = shown["built"].map({True: "yes", False: ""})
    return shown.assign(run=runs)[["run", "criterion", "n", *SHORT.values()]]
