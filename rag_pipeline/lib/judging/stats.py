"""The figures of a judge whose noise is measured: its agreement with people (Cohen's kappa), its mean
corrected by people's labels (prediction-powered inference) with a 95% interval, Spearman's rho."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
NAN = float("nan")


@dataclass(frozen=True)
class Estimate:
    mean: float
    low: float
    high: float


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two yes/no raters over the same items; NaN with no item, or when chance
    agreement is certain (both said the same one thing throughout)."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if not len(a):
        return NAN
    observed = float((a == b).mean())
    chance = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    return NAN if chance >= 1 - 1e-12 else (observed - chance) / (1 - chance)


def ppi_mean(scores: np.ndarray, labels: np.ndarray) -> Estimate:
    """Prediction-powered inference of the mean of people's labels. `scores`: the judge's per item
    (NaN: no valid verdict, left out); `labels`: people's per item, 1 or 0 (NaN: not labelled).

    The estimate is the judge's mean over all items plus the mean of (label - judge) over the
    labelled ones, which removes the judge's bias; its variance is the sum of both terms' (normal
    95% interval). Figures outside [0, 1] are clipped to it. NaN without a labelled item; the
    interval NaN with fewer than two."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    judged = scores[~np.isnan(scores)]
    both = ~np.isnan(scores) & ~np.isnan(labels)
    rectifier = labels[both] - scores[both]
    if not len(rectifier):
        return Estimate(NAN, NAN, NAN)
    mean = float(judged.mean() + rectifier.mean())
    if len(rectifier) < 2:
        return Estimate(min(1.0, max(0.0, mean)), NAN, NAN)
    spread = judged.var(ddof=1) / len(judged) if len(judged) > 1 else 0.0
    se = math.sqrt(spread + rectifier.var(ddof=1) / len(rectifier))
    return Estimate(*(min(1.0, max(0.0, v)) for v in (mean, mean - Z95 * se, mean + Z95 * se)))


def ppi_outcomes(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per item, a value whose mean is the PPI estimate (`ppi_mean`, unclipped): the judge's score, and
    on the n labelled of N items, plus N/n times (label - score). A paired test over these values
    carries the labels' correction and its noise. `scores` must all be valid; no label: the scores."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    labelled = ~np.isnan(labels)
    out = scores.copy()
    if labelled.any():
        out[labelled] += len(scores) / labelled.sum() * (labels[labelled] - scores[labelled])
    return out


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation; NaN with fewer than three pairs or a constant side."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[keep], y[keep]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return NAN
    from scipy import stats  # 2 s of a no-op `make run` when imported with the module

    return float(stats.spearmanr(x, y).statistic)
