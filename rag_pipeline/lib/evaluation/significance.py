"""Whether a configuration differs from the baseline on the same questions: a paired randomisation test,
exact for 0/1 outcomes, and Holm's correction across several comparisons.

With 0/1 outcomes (a hit or a miss per question) the differences are -1, 0 or 1, and the sign flips'
distribution is the binomial of the questions on which the two differ: the exact p-value (McNemar's
exact test) is computed, however small. Other outcomes (the judge's shares, PPI's corrected values)
are tested with `ROUNDS` random sign flips, whose smallest p-value is 1 / (ROUNDS + 1): `p_text`
says "p < 0.0001" there, never a figure the test cannot resolve.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

ROUNDS = 10_000
FLOOR = 1 / (ROUNDS + 1)  # the smallest p-value the random sign flips can give
# fewer paired questions than this cannot be significant at 0.05 (the exact test's smallest p-value
# on n questions is 2 / 2^n): a split this small decides nothing
FEWEST_TO_DECIDE = 6


def paired_randomization(a: np.ndarray, b: np.ndarray, rounds: int = ROUNDS, seed: int = 0) -> float:
    """Two-sided p-value of the mean paired difference a - b (see `paired_randomizations`)."""
    return float(paired_randomizations(np.asarray(a, dtype=float)[None, :], b, rounds, seed)[0])


def exact_signs(diff: np.ndarray) -> np.ndarray:
    """Per row of -1/0/1 differences, the exact two-sided p-value of their sum under random signs:
    twice the binomial tail of the rarer sign among the questions that differ, at most 1."""
    from scipy import stats  # 2 s of a no-op `make run` when imported with the module

    differ = (diff != 0).sum(axis=1)
    rarer = np.minimum((diff > 0).sum(axis=1), (diff < 0).sum(axis=1))
    return np.minimum(1.0, 2 * stats.binom.cdf(rarer, differ, 0.5))


def paired_randomizations(a: np.ndarray, b: np.ndarray, rounds: int = ROUNDS, seed: int = 0) -> np.ndarray:
    """`paired_randomization` of each row of `a` (configurations x questions) against `b`: exact when
    every outcome is 0 or 1, else by the same `rounds` random sign flips for all rows (one matrix
    product)."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)[None, :]
    p = np.ones(len(diff))
    if diff.shape[1] == 0:
        return p
    varied = diff.any(axis=1)
    if np.isin(diff, (-1.0, 0.0, 1.0)).all():
        p[varied] = exact_signs(diff[varied])
        return p
    signs = random_signs(rounds, diff.shape[1], seed)
    observed = np.abs(diff.mean(axis=1))
    flipped = np.abs(signs @ diff.T) / diff.shape[1]
    p[varied] = ((flipped[:, varied] >= observed[varied] - 1e-12).sum(axis=0) + 1) / (rounds + 1)
    return p


@functools.lru_cache(maxsize=4)
def random_signs(rounds: int, n: int, seed: int) -> np.ndarray:
    """The sign flips of `paired_randomization`: one draw serves every comparison of n questions."""
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(rounds, n))
    signs.flags.writeable = False
    return signs


def p_text(p: float) -> str:
    """`p = 0.012`, `p = 7.5e-09` (exact), or `p < 0.0001` at the random sign flips' floor."""
    return "p < 0.0001" if abs(p - FLOOR) < 1e-12 else f"p = {p:.2g}"


def p_value(p: float) -> float:
    """A p-value as the reports keep it: three significant digits (a small exact p is no 0)."""
    return float(f"{p:.3g}")


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of p-values for testing several hypotheses at once: the i-th
    smallest is multiplied by (m - i), kept monotone and capped at 1."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.empty(len(p))
    running = 0.0
    for i, j in enumerate(np.argsort(p, kind="stable")):
        running = max(running, min(1.0, (len(p) - i) * p[j]))
        adjusted[j] = running
    return adjusted.tolist()
