"""What the served-index check can take from work already done, so that it costs what changed.

Exact truth from retrieval: the retrieval lane's `dense` ranking is exact cosine top-k over the
chunks each asker may read, with the same vectors and scores computed by the same order-independent
sum (`dense_scores`); only its order among equal scores differs (chunk_id there, the table's row
order here). `truth_from_ranking` re-orders each ranking's equal scores by row position, which gives
exactly what brute force over the table gives, or says it cannot (equal scores reaching past the
end of a cut ranking).

Served results kept across runs: an exact (brute-force) LanceDB search of a question can only change
when a row of its result is gone, when a row it did not return now scores (nearly) as high as its
last row, or when it returned fewer than k rows and a readable row it did not return exists. The
current exact ranking tells the best score outside the result, so `reusable` decides each question
without a search; near-ties (within `MARGIN`) inside the result at a cut-off k are searched again,
since their order may follow the rows' layout.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import lancedb
import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, read_table, readable_mask, write_table

Ranking = list[tuple[str, float]]  # (chunk_id, cosine score), best first
MARGIN = 1e-4  # cosine: far above float32 rounding of two ways to compute one distance


@dataclass(frozen=True)
class TableRows:
    """A served table's chunk ids in scan order (the order brute force breaks ties by) and access."""

    ids: pd.Index
    access: list[list[str]]

    @classmethod
    def read(cls, table: lancedb.table.Table) -> TableRows:
        data = table.search().select(["chunk_id", "access"]).limit(None).to_arrow()
        return cls(pd.Index(data["chunk_id"].to_pylist(), dtype=object), data["access"].to_pylist())

    def n_readable(self, groups: Sequence[Sequence[str] | None]) -> np.ndarray:
        counts: dict[frozenset[str] | None, int] = {}
        out = []
        for g in groups:
            key = None if g is None else frozenset(g)
            if key not in counts:
                counts[key] = int(readable_mask(self.access, g).sum())
            out.append(counts[key])
        return np.asarray(out, dtype=int)


def truth_from_ranking(
    rows: TableRows, rankings: Sequence[Ranking], n_readable: np.ndarray, k: int
) -> list[list[str]] | None:
    """Each question's exact top-k over its readable rows, equal scores by row position (what
    `exact_top_k` gives), from its exact ranking of the readable rows (all of them, or the best
    ones, cut anywhere); None when a ranking does not determine it."""
    if not rows.ids.is_unique:
        return None
    truth = []
    for ranking, n in zip(rankings, n_readable):
        if not min(k, n) <= len(ranking) <= n:
            return None  # not a ranking of these rows
        ids = [c for c, _ in ranking]
        positions = rows.ids.get_indexer(ids)
        if (positions < 0).any():
            return None
        scores = np.asarray([s for _, s in ranking], dtype=np.float64)
        order = np.lexsort((positions, -scores))[:k]
        if len(ranking) < n and len(order) and scores[order[-1]] <= scores[-1]:
            return None  # rows left out of the ranking may tie with its k-th
        truth.append([ids[i] for i in order])
    return truth


def query_key(vector: np.ndarray, groups: Sequence[str] | None) -> str:
    """What a served result depends on besides the table: the query vector and the asker's groups."""
    digest = hashlib.sha256(np.asarray(vector, dtype=np.float32).tobytes())
    digest.update(json.dumps(None if groups is None else sorted(groups)).encode())
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class Served:
    """One question's last served result (exact search) and how long that search took."""

    ids: list[str]
    distances: list[float]
    latency_ms: float


def reusable(
    kept: Served | None, rows: TableRows, ranking: Ranking | None, n_readable: int, ks: Sequence[int]
) -> bool:
    """Would an exact search of the table now return `kept` again, up to the order of equal
    scores inside a cut-off k? `ranking` is the question's exact ranking of the readable rows now."""
    if kept is None or ranking is None or (rows.ids.get_indexer(kept.ids) < 0).any():
        return False  # never searched, or a row of its result is gone
    similarity = 1 - np.asarray(kept.distances, dtype=np.float64)
    for k in ks:
        if k < len(similarity) and similarity[k - 1] - similarity[k] <= MARGIN:
            return False
    now = dict(ranking)
    for chunk_id, was in zip(kept.ids, similarity):
        if chunk_id in now and abs(now[chunk_id] - was) > MARGIN:
            return False  # not the vectors it was searched against
    returned = set(kept.ids)
    outside = next((s for c, s in ranking if c not in returned), None)
    if outside is None:
        # every ranked row was returned: is that every readable row?
        return len(ranking) >= n_readable
    return len(kept.ids) >= max(ks) and outside < similarity[-1] - MARGIN


@dataclass
class KeptResults:
    """Served results per query key, kept in one Parquet file per table."""

    stamp: str
    results: dict[str, Served] = field(default_factory=dict)
    searched: int = 0  # how many questions the last evaluation searched

    @classmethod
    def load(cls, path: AnyPath, stamp: str) -> KeptResults:
        if not path.exists():
            return cls(stamp)
        table = read_table(path)
        if (table.schema.metadata or {}).get(b"stamp", b"").decode() != stamp:
            return cls(stamp)
        frame = table.to_pylist()
        return cls(stamp, {r["key"]: Served(r["ids"], r["distances"], r["latency_ms"]) for r in frame})

    def save(self, path: AnyPath) -> None:
        keys = list(self.results)
        table = pa.table(
            {
                "key": pa.array(keys, pa.string()),
                "ids": pa.array([self.results[k].ids for k in keys], pa.list_(pa.string())),
                "distances": pa.array([self.results[k].distances for k in keys], pa.list_(pa.float64())),
                "latency_ms": pa.array([self.results[k].latency_ms for k in keys], pa.float64()),
            }
        )
        write_table(table.replace_schema_metadata({"stamp": self.stamp}), path, compression="snappy")
