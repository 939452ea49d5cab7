"""Searching a served table: top-k search with the asker's groups as a pre-filter, and without what
a narrowing since the release withholds, through the store's `ServedTable.search`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from rag_pipeline.lib.serving.revoked import LiveTable
from rag_pipeline.lib.serving.store import DEFAULT_ANN, AnnConfig, Query, ServedTable


class Hits(NamedTuple):
    chunk_ids: list[str]
    distances: list[float]  # cosine distance, 1 - cosine similarity


def search(
    table: ServedTable,
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
    table: ServedTable | LiveTable,
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
    withheld: list[str] = []
    if isinstance(table, LiveTable):
        table, withheld = table.table, table.withheld(groups)
    vector = np.asarray(query_vector, dtype=np.float32)
    return table.search(Query(vector, k, groups, columns, withheld, prefilter, exact, ann))
