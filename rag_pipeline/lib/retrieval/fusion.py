"""Fusing ranked lists from several retrievers (each fed `candidate_k` results)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

Ranked = Sequence[tuple[Hashable, float]]  # (item, score), best first


def rrf(runs: Sequence[Ranked], k: float = 60.0) -> list[tuple[Hashable, float]]:
    """Reciprocal Rank Fusion: sum of 1 / (k + rank) over the runs an item appears in."""
    fused: dict[Hashable, float] = {}
    for run in runs:
        for rank, (item, _) in enumerate(run, 1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return _ordered(fused, runs)


def _minmax(scores: np.ndarray) -> np.ndarray:
    span = scores.max() - scores.min()
    return (scores - scores.min()) / span if span > 0 else np.ones_like(scores)


def _zscore(scores: np.ndarray) -> np.ndarray:
    std = scores.std()
    return (scores - scores.mean()) / std if std > 0 else np.zeros_like(scores)


NORMALISATIONS = {"minmax": _minmax, "zscore": _zscore}  # a score fusion's, by its name


def normalized(scores: np.ndarray, method: str) -> np.ndarray:
    if len(scores) == 0:
        return scores
    if method not in NORMALISATIONS:
        raise ValueError(f"unknown score normalisation {method!r}; choose one of {', '.join(NORMALISATIONS)}")
    return NORMALISATIONS[method](scores)


def score_fusion(
    runs: Sequence[Ranked], weights: Sequence[float], method: str = "minmax"
) -> list[tuple[Hashable, float]]:
    """Weighted sum of each run's normalised scores; an item missing from a run gets that run's
    lowest normalised score (it was below its candidate cut)."""
    fused: dict[Hashable, float] = {}
    floors = []
    norm_runs = []
    for run in runs:
        values = normalized(np.array([s for _, s in run], dtype=float), method)
        norm_runs.append(dict(zip([i for i, _ in run], values)))
        floors.append(float(values.min()) if len(values) else 0.0)
    items = {i for run in norm_runs for i in run}
    for item in items:
        fused[item] = sum(w * run.get(item, floor) for w, run, floor in zip(weights, norm_runs, floors))
    return _ordered(fused, runs)


def _ordered(fused: dict[Hashable, float], runs: Sequence[Ranked]) -> list[tuple[Hashable, float]]:
    """Best score first; ties broken by the best rank the item had in any run, then by order seen."""
    best: dict[Hashable, int] = {}
    for run in runs:
        for rank, (item, _) in enumerate(run):
            best[item] = min(best.get(item, rank), rank)
    seen = {item: n for n, item in enumerate(best)}
    return sorted(fused.items(), key=lambda kv: (-kv[1], best[kv[0]], seen[kv[0]]))


def merge_parents(
    hits: list[tuple[int, float]], parent_of: np.ndarray, parent_span: list[tuple[str, int, int]]
) -> list[tuple[int, float]]:
    """Each chunk stands for its parent sections, at the best rank of its children; a parent
    already passed, or lying inside one already passed, is not passed again."""
    passed: list[tuple[str, int, int]] = []
    seen: set[str] = set()
    merged = []
    for position, score in hits:
        note, start, end = parent_span[position]
        if parent_of[position] in seen or any(n == note and s <= start and end <= e for n, s, e in passed):
            continue
        seen.add(parent_of[position])
        passed.append((note, start, end))
        merged.append((position, score))
    return merged
