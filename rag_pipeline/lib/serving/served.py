"""What the served-index check can take from work already done, so that it costs what changed.

Exact truth from retrieval: the retrieval lane's `dense` ranking is exact cosine top-k over the
chunks each asker may read, with the same vectors and scores computed by the same order-independent
sum (`dense_scores`); only its order among equal scores differs (chunk_id there, the table's row
order here). `truth_from_ranking` re-orders each ranking's equal scores by row position, which gives
exactly what brute force over the table gives, or says it cannot (equal scores reaching past the
end of a cut ranking).

Served results kept across runs: an exact (brute-force) LanceDB search of a question can only change
when a row of its result is gone, when a row it did not return now ranks as high as its last row,
or when it returned fewer than k rows and a readable row it did not return exists. LanceDB's
distance of a row depends on the two vectors only (not on the table around them), so the kept
result's rows keep their distances and their order, except equal distances at a cut-off k, which
follow the rows' layout and are searched again. The current exact ranking tells which rows outside
the result score within `MARGIN` (rounding of our sum against LanceDB's) of its last row: those few
rows get LanceDB's own distance on a scratch table (`probe_distances`), and only a row that ranks as
high as the last one makes the question be searched again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, read_table, readable_mask, write_table
from rag_pipeline.lib.serving.store import ServedTable

Ranking = list[tuple[str, float]]  # (chunk_id, cosine score), best first
MARGIN = 1e-4  # cosine: far above float32 rounding of two ways to compute one distance


@dataclass(frozen=True)
class TableRows:
    """A served table's chunk ids in scan order (the order brute force breaks ties by) and access."""

    ids: pd.Index
    access_column: pa.ChunkedArray

    @classmethod
    def read(cls, table: ServedTable) -> TableRows:
        data = table.read(["chunk_id", "access"])
        return cls(pd.Index(data["chunk_id"].to_numpy(), dtype=object), data["access"])

    @cached_property
    def access(self) -> list[list[str]]:  # read only for an asker with groups
        return self.access_column.to_pylist()

    def n_readable(self, groups: Sequence[Sequence[str] | None]) -> np.ndarray:
        counts: dict[frozenset[str] | None, int] = {None: len(self.ids)}
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


def rows_to_probe(
    kept: Served | None, rows: TableRows, ranking: Ranking | None, n_readable: int, ks: Sequence[int]
) -> list[str] | None:
    """None when the question must be searched again; else the rows outside its kept result that
    must rank below the result's last row (LanceDB's distance, see `probe_distances`) for an exact
    search of the table to return `kept` again. `ranking` is its exact ranking of the readable rows now."""
    if kept is None or ranking is None or (rows.ids.get_indexer(kept.ids) < 0).any():
        return None  # never searched, or a row of its result is gone
    distances = kept.distances
    if any(k < len(distances) and distances[k - 1] == distances[k] for k in ks):
        return None  # equal distances across a cut-off: the layout decides
    similarity = 1 - np.asarray(distances, dtype=np.float64)
    now = dict(ranking)
    for chunk_id, was in zip(kept.ids, similarity):
        if chunk_id in now and abs(now[chunk_id] - was) > MARGIN:
            return None  # not the vectors it was searched against
    returned = set(kept.ids)
    outside = [(c, s) for c, s in ranking if c not in returned]
    if not outside:
        # every ranked row was returned: is that every readable row?
        return [] if len(ranking) >= n_readable else None
    if len(kept.ids) < max(ks):
        return None  # a readable row it did not return would fill it
    near = [c for c, s in outside if s >= similarity[-1] - MARGIN]
    if len(near) == len(outside) and len(ranking) < n_readable:
        return None  # rows past the cut ranking may be near too
    return near


def probe_distances(
    table: ServedTable, rows: TableRows, query_vectors: np.ndarray, wanted: dict[int, list[str]]
) -> dict[int, dict[str, float]]:
    """The store's own cosine distance of each query `i` to the rows `wanted[i]` (see
    `ServedTable.distances`)."""
    ids = sorted({c for chosen in wanted.values() for c in chosen})
    return table.distances(rows.ids.get_indexer(ids).tolist(), {i: query_vectors[i] for i in wanted})


def still_served(kept: Served, near: list[str], probed: dict[str, float]) -> bool:
    """Does every near row rank strictly below the kept result's last row? The last row is probed
    too: its distance there must be the one the table gave, or the probe cannot be trusted."""
    last = kept.distances[-1]
    return probed.get(kept.ids[-1]) == last and all(probed.get(c, last) > last for c in near)


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
