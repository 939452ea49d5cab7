"""Searching a served table: the approximate index it gets past a size, and top-k search with the
asker's groups as a pre-filter (the one access rule, as SQL)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, storage_options
from rag_pipeline.lib.serving.revoked import LiveTable

if TYPE_CHECKING:  # lancedb takes seconds to import: loaded where a table is opened
    import lancedb
    from lancedb.index import HnswSq, IvfPq


@dataclass(frozen=True)
class AnnConfig:
    """Which approximate index a table gets once it has `min_rows` rows, and how it is queried."""

    kind: str = "ivf_pq"  # or "ivf_hnsw_sq"
    min_rows: int = 5000
    sub_vector_dims: int = 8  # ivf_pq: dims per PQ sub-vector (8 or 16 keep LanceDB on its SIMD path)
    kmeans_iterations: int = 10  # LanceDB's 50 took ~3x as long to build (20k rows, 384 dims)
    nprobes: int = 20  # ivf: partitions always probed; LanceDB probes more when a filter leaves too few rows
    # ivf_pq: PQ candidates re-ranked with the full vectors, whatever k, since PQ error decides how deep
    # the true neighbours rank. On bench_serving's near-tied clusters under a 1% filter, 300 gave
    # recall@10 0.90-0.97, 1000 gave 1.0 for ~10 ms more; the number of probes made no difference.
    refine_candidates: int = 1000
    ef: int = 100  # ivf_hnsw_sq: candidates kept while walking the graph

    def index(self, rows: int, dim: int) -> tuple[IvfPq | HnswSq, dict]:
        """The LanceDB index config for a table of `rows` vectors, and its parameters to report."""
        from lancedb.index import HnswSq, IvfPq

        if self.kind == "ivf_pq":
            params = {
                "num_partitions": max(1, round(math.sqrt(rows))),
                "num_sub_vectors": max(1, dim // self.sub_vector_dims),
                "num_bits": 8,
                "max_iterations": self.kmeans_iterations,
            }
            return IvfPq(distance_type="cosine", **params), params
        if self.kind == "ivf_hnsw_sq":
            # one graph: the tables here are small enough to train it in memory
            params = {
                "num_partitions": 1,
                "m": 20,
                "ef_construction": 300,
                "max_iterations": self.kmeans_iterations,
            }
            return HnswSq(distance_type="cosine", **params), params
        raise ValueError(f"unknown ANN index kind {self.kind!r} (ivf_pq or ivf_hnsw_sq)")

    def query_params(self) -> dict:
        if self.kind == "ivf_pq":
            return {"nprobes": self.nprobes, "refine_candidates": self.refine_candidates}
        return {"ef": self.ef}


DEFAULT_ANN = AnnConfig()


class Hits(NamedTuple):
    chunk_ids: list[str]
    distances: list[float]  # cosine distance, 1 - cosine similarity


def connect(db_dir: str | AnyPath, consistency: timedelta) -> lancedb.DBConnection:
    """The LanceDB database in `db_dir`, whose reads see commits at most `consistency` old."""
    import lancedb

    return lancedb.connect(
        str(db_dir), read_consistency_interval=consistency, storage_options=storage_options(db_dir)
    )


def open_table(db_dir: str | AnyPath, table_name: str) -> lancedb.table.Table:
    """A served table; the reader follows new versions, so a cleanup never pulls files from under it."""
    return connect(db_dir, timedelta(seconds=5)).open_table(table_name)


def _quoted(values: Sequence[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def access_filter(groups: Sequence[str] | None, withheld: Sequence[str] = ()) -> str | None:
    """SQL keeping the rows a reader in `groups` may see: public ones and those sharing a group,
    but for the notes `withheld` (see `revoked`)."""
    rules = [f"note NOT IN ({_quoted(withheld)})"] if withheld else []
    if groups is not None:
        public = "array_length(access) = 0"
        rules.append(
            f"({public} OR array_has_any(access, make_array({_quoted(groups)})))" if groups else public
        )
    return " AND ".join(rules) or None


def vector_index(table: lancedb.table.Table) -> lancedb.index.IndexConfig | None:
    return next((i for i in table.list_indices() if i.columns == ["vector"]), None)


def index_kind(table: lancedb.table.Table) -> str:
    """`exact` when the table has no vector index, else e.g. `ivf_pq`."""
    index = vector_index(table)
    return "exact" if index is None else table.index_stats(index.name).index_type.lower()


def search(
    table: lancedb.table.Table,
    query_vectors: np.ndarray,
    k: int,
    groups: Sequence[str] | None,
    *,
    prefilter: bool = True,
    exact: bool = False,
    ann: AnnConfig = DEFAULT_ANN,
) -> list[Hits]:
    """Top-k rows readable by `groups` (None: everything) for each query, nearest first.

    prefilter=False filters the ANN's top-k afterwards, which can return fewer than k rows;
    exact=True bypasses the index (brute force over the readable rows).
    """
    out = []
    for q in np.atleast_2d(np.asarray(query_vectors, dtype=np.float32)):
        found = search_rows(table, q, k, groups, ["chunk_id"], prefilter=prefilter, exact=exact, ann=ann)
        out.append(Hits(found["chunk_id"].to_pylist(), found["_distance"].to_pylist()))
    return out


def search_rows(
    table: lancedb.table.Table | LiveTable,
    query_vector: np.ndarray,
    k: int,
    groups: Sequence[str] | None,
    columns: Sequence[str],
    *,
    prefilter: bool = True,
    exact: bool = False,
    ann: AnnConfig = DEFAULT_ANN,
) -> pa.Table:
    """One query's top-k readable rows (see `search`): `columns` and `_distance`, nearest first. A
    `LiveTable` (`open_live`) leaves out what a narrowing since its release withholds from `groups`."""
    withheld = []
    if isinstance(table, LiveTable):
        table, withheld = table.table, table.withheld(groups)
    where = access_filter(groups, withheld)
    query = table.search(np.asarray(query_vector, dtype=np.float32)).distance_type("cosine")
    query = query.select([*columns, "_distance"]).limit(k)
    if where is not None:
        query = query.where(where, prefilter=prefilter)
    if exact:
        query = query.bypass_vector_index()
    elif ann.kind == "ivf_pq":
        # no upper bound on probes: a selective prefilter may need far partitions to fill k
        refine = max(1, math.ceil(ann.refine_candidates / k))
        query = query.minimum_nprobes(ann.nprobes).maximum_nprobes(0).refine_factor(refine)
    else:
        query = query.ef(max(ann.ef, k))
    return query.to_arrow()
