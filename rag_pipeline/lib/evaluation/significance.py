"""Whether a configuration differs from the baseline on the same questions: a paired randomisation test."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np


def paired_randomization(a: np.ndarray, b: np.ndarray, rounds: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of the mean paired difference a - b, by random sign flips of the differences."""
    return float(paired_randomizations(np.asarray(a, dtype=float)[None, :], b, rounds, seed)[0])


def paired_randomizations(a: np.ndarray, b: np.ndarray, rounds: int = 10_000, seed: int = 0) -> np.ndarray:
    """`paired_randomization` of each row of `a` (configurations x questions) against `b`, with the
    same sign flips: one matrix product for all rows."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)[None, :]
    p = np.ones(len(diff))
    if diff.shape[1] == 0:
        return p
    signs = random_signs(rounds, diff.shape[1], seed)
    observed = np.abs(diff.mean(axis=1))
    # the sums of 0/1 differences are exact, as the element-wise means were
    flipped = np.abs(signs @ diff.T) / diff.shape[1]
    varied = diff.any(axis=1)
    p[varied] = ((flipped[:, varied] >= observed[varied] - 1e-12).sum(axis=0) + 1) / (rounds + 1)
    return p


@functools.lru_cache(maxsize=4)
def random_signs(rounds: int, n: int, seed: int) -> np.ndarray:
    """The sign flips of `paired_randomization`: one draw serves every comparison of n questions."""
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(rounds, n))
    signs.flags.writeable = False
    return signs


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
