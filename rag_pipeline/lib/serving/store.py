"""The seam in front of the served tables: what the pipeline, the release and applications ask of a
store of tables (`Store`) and of one table in it (`ServedTable`), and nothing of LanceDB.

LanceDB's store is `lance.LanceStore` (the one module, with `tables.py` its sync, that imports
LanceDB); `live.served_store` says which store a data directory's tables are in. Another store goes
behind the seam by implementing these two protocols and being returned there."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pyarrow as pa

from rag_pipeline.lib.serving.diff import values

if TYPE_CHECKING:
    from rag_pipeline.lib.serving.rows import LazyRows

LIVE = "live"  # the tag on the version the last release passed
DB_DIR = "lancedb"  # the served tables' directory under the data directory
# readers still on a version this recent keep working while a sync cleans up
DEFAULT_RETAIN = timedelta(minutes=10)


@dataclass(frozen=True)
class AnnConfig:
    """Which approximate index a table gets once it has `min_rows` rows, and how it is queried."""

    kind: str = "ivf_pq"  # a key of `ANN_QUERIES`
    min_rows: int = 5000
    sub_vector_dims: int = 8  # ivf_pq: dims per PQ sub-vector (8 or 16 keep LanceDB on its SIMD path)
    kmeans_iterations: int = 10  # LanceDB's 50 took ~3x as long to build (20k rows, 384 dims)
    nprobes: int = 20  # ivf: partitions always probed; LanceDB probes more when a filter leaves too few rows
    # ivf_pq: PQ candidates re-ranked with the full vectors, whatever k, since PQ error decides how deep
    # the true neighbours rank. On bench_serving's near-tied clusters under a 1% filter, 300 gave
    # recall@10 0.90-0.97, 1000 gave 1.0 for ~10 ms more; the number of probes made no difference.
    refine_candidates: int = 1000
    ef: int = 100  # ivf_hnsw_sq: candidates kept while walking the graph

    def query_params(self) -> dict:
        return ANN_QUERIES[self.kind](self)


# every ANN kind by name, and the fields of `AnnConfig` its queries use (as a table reports them);
# how each is built and queried in LanceDB: `tables.INDEXES`, `lance.TUNINGS`
ANN_QUERIES: dict[str, Callable[[AnnConfig], dict]] = {
    "ivf_pq": lambda ann: {"nprobes": ann.nprobes, "refine_candidates": ann.refine_candidates},
    "ivf_hnsw_sq": lambda ann: {"ef": ann.ef},
}


DEFAULT_ANN = AnnConfig()


@dataclass(frozen=True)
class Query:
    """One top-k search by cosine distance over the rows `groups` may read (None: every row), but for
    the notes `withheld`. `prefilter` false filters the index's top-k afterwards (which can return
    fewer than k rows); `exact` bypasses the index."""

    vector: np.ndarray
    k: int
    groups: Sequence[str] | None
    columns: Sequence[str]
    withheld: Sequence[str] = ()
    prefilter: bool = True
    exact: bool = False
    ann: AnnConfig = DEFAULT_ANN


class MissingTable(ValueError):
    """The store holds no table of that name."""


class MissingVersion(ValueError):
    """The table has no such version (never made, or cleaned up)."""


class ServedTable(Protocol):
    """One served table, at its head or at the version `checkout` chose."""

    name: str

    @property
    def version(self) -> int: ...

    def count_rows(self) -> int: ...

    def read(self, columns: Sequence[str]) -> pa.Table:
        """Every row's `columns`, in scan order (the order an exact search breaks ties by)."""
        ...

    def checkout(self, version: int) -> None:
        """Read `version` from now on; `MissingVersion` when there is none."""
        ...

    def tagged(self, tag: str) -> int | None:
        """The version `tag` is on, None when the table has no such tag."""
        ...

    def tag(self, tag: str, version: int) -> None:
        """Put `tag` on `version` (created or moved; no row is written)."""
        ...

    def index_kind(self) -> str:
        """`exact` when the table has no vector index, else its kind (`ivf_pq`, ...)."""
        ...

    def search(self, query: Query) -> pa.Table:
        """The query's top-k rows: its `columns` and `_distance`, nearest first."""
        ...

    def distances(
        self, positions: Sequence[int], queries: Mapping[int, np.ndarray]
    ) -> dict[int, dict[str, float]]:
        """Per query, the cosine distance of the rows at scan `positions` (chunk_id -> distance) as
        an exact search of this store computes it."""
        ...


class Store(Protocol):
    """The served tables, one per strategy (`live.table_key`)."""

    def open(self, name: str) -> ServedTable:
        """Table `name` at its head; `MissingTable` when there is none."""
        ...

    def names(self) -> list[str]:
        """The tables it holds (none, and nothing made, when the store does not exist yet)."""
        ...

    def sync(self, name: str, rows: pa.Table | LazyRows, ann: AnnConfig, retain: timedelta) -> dict:
        """Make table `name` hold exactly `rows` (`rows.serving_rows`, `rows.LazyRows`) in one new
        version, writing only what changed, every chunk_id once, with the index `ann` asks for;
        versions older than `retain` may be cleaned up, never one a tag is on. Returns the asset's
        metadata: `table`, `version`, `rows`, `rows_added`, `rows_removed`, `rows_updated`,
        `ids_repaired`, `index_type`, `index_params`, `index_trained`, `versions_kept`, `disk_bytes`."""
        ...


def duplicate_chunk_ids(table: ServedTable) -> int:
    """How many chunk_ids the table holds more than once (0 for a sound table)."""
    ids = values(table.read(["chunk_id"]), "chunk_id")
    return int(ids[ids.duplicated()].nunique())
