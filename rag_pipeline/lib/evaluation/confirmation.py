"""Chosen on the development questions, confirmed on the test questions.

The best of many configurations on some questions is biased upward on those questions (the winner's
curse), and a p-value for a leader picked after the fact is too small. So the configurations are
ordered on the `dev` split alone (`dev_order`), and only the `test` split measures the chosen one
against the baseline: per configuration, the headline measure and MRR@10 on `dev`, the headline
measure on `test`, and on each split the paired difference from the baseline with its p-value (the
development one is what a verdict falls back on, named so, when too few test questions can decide).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag_pipeline.lib.evaluation.metrics import HEADLINE_BUDGET, first_ranks_of, hits_within
from rag_pipeline.lib.evaluation.plots import configuration_name
from rag_pipeline.lib.evaluation.significance import paired_randomizations
from rag_pipeline.lib.questions import DEV, TEST

FIGURES = ["n_dev", "dev", "dev_mrr@10", "dev_baseline", "dev_delta", "dev_p"]
FIGURES += ["n_test", "test", "test_baseline", "test_delta", "test_p"]
DIGITS = 4  # values equal to this many decimals tie
# the figures as the configuration matrix names them: Δ and p are the test split's
MATRIX_COLUMNS = {"test_delta": "Δ", "test_p": "p"}


def split_figures(
    hits: np.ndarray, reciprocal: np.ndarray, split: np.ndarray, baseline: int | None
) -> pd.DataFrame:
    """One row of `FIGURES` per configuration. `hits` (configurations x answerable questions): the
    headline hit; `reciprocal`: 1 / the first evidence rank, 0 past rank 10; `split`: each question's
    split; `baseline`: the baseline's row (None: not evaluated, no comparison)."""
    figures = pd.DataFrame(index=range(len(hits)))
    for name in (DEV, TEST):
        chosen = split == name
        figures[f"n_{name}"] = int(chosen.sum())
        figures[name] = hits[:, chosen].mean(axis=1) if chosen.any() else np.nan
        if name == DEV:
            figures["dev_mrr@10"] = reciprocal[:, chosen].mean(axis=1) if chosen.any() else np.nan
        for figure in ("baseline", "delta", "p"):
            figures[f"{name}_{figure}"] = np.nan
        if baseline is not None and chosen.any():
            base = hits[baseline, chosen]
            figures[f"{name}_baseline"] = base.mean()
            figures[f"{name}_delta"] = figures[name] - base.mean()
            figures[f"{name}_p"] = paired_randomizations(hits[:, chosen], base)
    return figures[FIGURES]


def dev_order(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (a row per configuration with `dev` and `dev_mrr@10`) in the order the verdict chooses
    by: the headline on the development questions (equal to `DIGITS` decimals ties), MRR@10 there
    breaking ties, the first row first among equals."""
    ranked = frame.assign(_value=frame["dev"].round(DIGITS))
    ranked = ranked.sort_values(["_value", "dev_mrr@10"], ascending=False, kind="stable", na_position="last")
    return ranked.drop(columns="_value")


def split_table(outcomes: pd.DataFrame, run_keys: list[str], baseline: tuple[str, str]) -> pd.DataFrame:
    """`split_figures` of every run (`run_keys`) of `outcomes`, its answerable questions aligned by
    id, against the baseline run of the same `embedding_version` (runs of different embedders are
    not compared)."""
    frames = []
    answerable = outcomes[outcomes["answerable"].astype(bool)]
    for _, runs in answerable.groupby("embedding_version", sort=False):
        ids = sorted(set(runs["question_id"]))
        by_run = {
            key: run.set_index("question_id").loc[ids].reset_index()
            for key, run in runs.groupby(run_keys, sort=False)
        }
        keys = list(by_run)
        firsts = [first_ranks_of(by_run[k]) for k in keys]
        hits = np.array([hits_within(by_run[k], HEADLINE_BUDGET) for k in keys], dtype=float)
        reciprocal = np.array([np.where(f <= 10, 1 / f, 0.0) for f in firsts])
        split = by_run[keys[0]]["split"].to_numpy(dtype=object)
        base = next((i for i, k in enumerate(keys) if (k[0], k[1]) == baseline), None)
        figures = split_figures(hits, reciprocal, split, base)
        frames.append(
            pd.DataFrame(keys, columns=run_keys).assign(baseline=configuration_name(*baseline)).join(figures)
        )
    columns = [*run_keys, "baseline", *FIGURES]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
