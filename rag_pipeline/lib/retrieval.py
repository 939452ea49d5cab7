"""Exact cosine top-k over L2-normalised vectors."""

from __future__ import annotations

import numpy as np


def top_k(index: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions, scores), each (n_queries, min(k, n_index)), best first; ties go to the lower position."""
    k = min(k, index.shape[0])
    if k == 0:
        empty = np.zeros((queries.shape[0], 0))
        return empty.astype(np.int64), empty.astype(np.float32)
    scores = queries @ index.T
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    part_scores = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -part_scores), axis=1)
    positions = np.take_along_axis(part, order, axis=1)
    return positions, np.take_along_axis(scores, positions, axis=1)
