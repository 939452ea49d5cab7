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
    for positions, matrix in blocks(vectors, block):
        columns = np.asarray(matrix, dtype=np.float64).T.copy()
        total = np.zeros((q.shape[0], columns.shape[1]))
        term = np.empty_like(total)
        for d in range(columns.shape[0]):
            np.multiply(q[:, d, None], columns[d], out=term)
            total += term
        out[:, positions] = total
    return out


def blocks(vectors, block: int):
    """(positions, rows) covering every row once: in storage order when the vectors can say it
    (`LaneVectors.blocks`, a row group at a time), else contiguous slices of `block` rows."""
    if hasattr(vectors, "blocks"):
        yield from vectors.blocks()
        return
    for start in range(0, len(vectors), block):
        yield slice(start, start + block), vectors[start : start + block]


Mask = np.ndarray | None  # per position, may the asker read it; None: everything


def best(
    scores: np.ndarray,
    k: int,
    tiebreak: np.ndarray | None = None,
    positive: bool = False,
    allowed: Mask = None,
) -> np.ndarray:
    """Positions of the k highest scores, best first; ties go to the lower `tiebreak` rank
    (default: the lower position). With `positive`, only positive scores count.

    `allowed` is the asker's access filter, applied before ranking: a position it excludes is
    never a candidate, so k readable positions are returned whenever k exist (no under-fill)."""
    keep = scores > 0 if positive else np.ones(len(scores), dtype=bool)
    candidates = np.flatnonzero(keep if allowed is None else keep & allowed)
    if len(candidates) > k > 0:
        kth = np.partition(scores[candidates], len(candidates) - k)[len(candidates) - k]
        candidates = candidates[scores[candidates] >= kth]
    keys = candidates if tiebreak is None else tiebreak[candidates]
    return candidates[np.lexsort((keys, -scores[candidates]))][:k]


def top_k(
    index: np.ndarray,
    queries: np.ndarray,
    k: int,
    tiebreak: np.ndarray | None = None,
    masks: list[Mask] | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query (positions, scores) of its k best readable rows (`masks`, one per query), best
    first; ties go to the lower `tiebreak` rank (default: the lower position)."""
    scores = dense_scores(index, queries)
    masks = masks or [None] * len(scores)
    found = [best(row, k, tiebreak, allowed=mask) for row, mask in zip(scores, masks)]
    return [(positions, row[positions]) for positions, row in zip(found, scores)]
