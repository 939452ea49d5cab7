"""Exact cosine top-k over L2-normalised vectors, and the ranking rule shared by every retriever."""

from __future__ import annotations

import numpy as np


def dense_scores(vectors: np.ndarray, queries: np.ndarray, block: int = 4096) -> np.ndarray:
    """(queries, vectors) float32 dot products, each summed over the dimensions in order in float64.

    BLAS may round one pair's product differently depending on the shapes it is called with;
    this sum is the same whichever rows are scored together, so scores of new chunks can be
    merged with scores kept from an earlier run."""
    q = np.asarray(queries, dtype=np.float64)
    out = np.empty((q.shape[0], len(vectors)), np.float32)
    for start in range(0, len(vectors), block):
        columns = np.asarray(vectors[start : start + block], dtype=np.float64).T.copy()
        total = np.zeros((q.shape[0], columns.shape[1]))
        term = np.empty_like(total)
        for d in range(columns.shape[0]):
            np.multiply(q[:, d, None], columns[d], out=term)
            total += term
        out[:, start : start + columns.shape[1]] = total
    return out


def best(
    scores: np.ndarray, k: int, tiebreak: np.ndarray | None = None, positive: bool = False
) -> np.ndarray:
    """Positions of the k highest scores, best first; ties go to the lower `tiebreak` rank
    (default: the lower position). With `positive`, only positive scores count."""
    candidates = np.flatnonzero(scores > 0) if positive else np.arange(len(scores))
    if len(candidates) > k > 0:
        kth = np.partition(scores[candidates], len(candidates) - k)[len(candidates) - k]
        candidates = candidates[scores[candidates] >= kth]
    keys = candidates if tiebreak is None else tiebreak[candidates]
    return candidates[np.lexsort((keys, -scores[candidates]))][:k]


def top_k(
    index: np.ndarray, queries: np.ndarray, k: int, tiebreak: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(positions, scores), each (n_queries, min(k, n_index)), best first; ties go to the lower
    `tiebreak` rank (default: the lower position)."""
    scores = dense_scores(index, queries)
    positions = np.array([best(row, k, tiebreak) for row in scores], dtype=np.int64)
    positions = positions.reshape(len(queries), min(k, len(index)))
    return positions, np.take_along_axis(scores, positions, axis=1)
