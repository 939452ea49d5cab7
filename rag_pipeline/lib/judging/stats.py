"""The figures of a judge whose noise is measured: its agreement with people (raw, and Cohen's kappa
where it is defined), its mean corrected by people's labels with a 95% interval (power-tuned
prediction-powered inference, PPI++, or the labels alone where their exact interval is narrower),
Spearman's rho.

PPI++ is computed here rather than with `ppi-python`, whose `ppi_mean_ci` without `lam` it matches to
the last digit (rag_pipeline_tests/judging/test_stats.py): that package pulls in scikit-learn,
statsmodels and numba for twenty lines of arithmetic."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
NAN = float("nan")
# an answer none of whose judge replies was valid: its score in both of PPI's terms (the judge's mean
# and the labels' rectifier), so that its person's label still counts and the correction stays unbiased
INVALID_SCORE = 0.5
MIN_LABELS = 10  # fewer people's labels than this make no figure: too few, not a number
PPI, LABELS = "PPI++", "labels only"  # what the headline interval is


@dataclass(frozen=True)
class Estimate:
    mean: float
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low


NONE = Estimate(NAN, NAN, NAN)


@dataclass(frozen=True)
class Corrected:
    """The corrected mean both ways and which is the headline (the narrower interval; empty with
    fewer than `MIN_LABELS` labels, when every figure is NaN)."""

    ppi: Estimate
    lam: float  # PPI++'s power-tuning weight of the judge, from 0 (labels alone) to 1 (vanilla PPI)
    labels: Estimate  # the labels' mean with its exact (Clopper-Pearson) interval
    headline: str

    @property
    def chosen(self) -> Estimate:
        return self.ppi if self.headline == PPI else self.labels if self.headline == LABELS else NONE


def constant(values: np.ndarray) -> bool:
    return len(values) == 0 or bool(np.all(values == values[0]))


def agreement(a: np.ndarray, b: np.ndarray) -> float:
    """The share of items two yes/no raters agree on; NaN with no item."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    return float((a == b).mean()) if len(a) else NAN


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two yes/no raters over the same items; NaN with no item, or when either rater
    said one thing throughout: chance agreement then is the observed agreement's own guess, and
    kappa says nothing (read `agreement`)."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if constant(a) or constant(b):
        return NAN
    observed = float((a == b).mean())
    chance = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    return (observed - chance) / (1 - chance)


def clopper_pearson(labels: np.ndarray) -> Estimate:
    """The mean of 0/1 labels with its exact 95% interval (Clopper-Pearson); NaN without a label."""
    labels = np.asarray(labels, dtype=float)
    n, k = len(labels), int(labels.sum())
    if not n:
        return NONE
    from scipy import stats  # 2 s of a no-op `make run` when imported with the module

    low = float(stats.beta.ppf(0.025, k, n - k + 1)) if k else 0.0
    high = float(stats.beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0
    return Estimate(k / n, low, high)


def _clipped(mean: float, se: float) -> Estimate:
    return Estimate(*(min(1.0, max(0.0, v)) for v in (mean, mean - Z95 * se, mean + Z95 * se)))


def ppi_plus_plus(scores: np.ndarray, labels: np.ndarray) -> tuple[Estimate, float]:
    """Power-tuned prediction-powered inference of the mean of people's labels, and its weight
    lambda. `scores`: the judge's per item (NaN: no valid verdict, scored `INVALID_SCORE`); `labels`:
    people's per item, 1 or 0 (NaN: not labelled).

    The estimate is lambda x the judge's mean over the unlabelled items plus the mean of
    (label - lambda x judge) over the labelled ones: two disjoint samples, so its variance is the sum
    of theirs (counting the labelled items in the judge's mean too would need their covariance).
    lambda = cov(label, judge) / ((1 + n/N) var(judge)), clipped to [0, 1], minimises that variance:
    a judge that tells nothing gets 0 (the labels' own mean), a perfect one 1 (vanilla PPI). With
    every item labelled, lambda is 0. Normal 95% interval, clipped to [0, 1]; NaN without a label."""
    scores = np.where(np.isnan(np.asarray(scores, dtype=float)), INVALID_SCORE, scores)
    labels = np.asarray(labels, dtype=float)
    labelled = ~np.isnan(labels)
    y, f, unlabelled = labels[labelled], scores[labelled], scores[~labelled]
    n, big_n = len(y), len(unlabelled)
    if not n:
        return NONE, NAN
    lam = 0.0
    spread = float(np.var(scores, ddof=1)) if len(scores) > 1 else 0.0
    if big_n and spread > 0:
        covariance = float(np.mean((y - y.mean()) * (f - f.mean())))
        lam = min(1.0, max(0.0, covariance / ((1 + n / big_n) * spread)))
    imputed = lam * unlabelled.mean() if big_n else 0.0
    rectifier = y - lam * f
    variance = rectifier.var() / n + ((lam * unlabelled).var() / big_n if big_n else 0.0)
    return _clipped(float(imputed + rectifier.mean()), math.sqrt(variance)), lam


def corrected_mean(scores: np.ndarray, labels: np.ndarray, minimum: int = MIN_LABELS) -> Corrected:
    """PPI++ (`ppi_plus_plus`) beside the labels alone (`clopper_pearson`); the headline is the
    narrower interval, so the correction never reads less certain than the labels by themselves, and
    a PPI interval of no width (labels all alike, where the normal approximation says nothing) is
    never the headline. Fewer than `minimum` labels: NaN throughout."""
    labels = np.asarray(labels, dtype=float)
    given = labels[~np.isnan(labels)]
    if len(given) < max(1, minimum):
        return Corrected(NONE, NAN, NONE, "")
    ppi, lam = ppi_plus_plus(scores, labels)
    alone = clopper_pearson(given)
    better = ppi.width > 0 and ppi.width < alone.width
    return Corrected(ppi, lam, alone, PPI if better else LABELS)


def ppi_outcomes(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per item, a value whose mean is vanilla PPI's estimate (lambda 1): the judge's score, and
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
