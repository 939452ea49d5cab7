"""LanceDB's store behind the seam (`store.Store`, `store.ServedTable`): embedded tables under one
directory, `tables.py` their sync. With it the only module that imports LanceDB, which takes
seconds to import: it is loaded where a table is first opened or synced."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.serving.rows import LazyRows
from rag_pipeline.lib.serving.store import (
    AnnConfig,
    MissingTable,
    MissingVersion,
    Query,
)
from rag_pipeline.lib.serving.tables import connect, index_kind, sync_table, tagged_version

if TYPE_CHECKING:
    import lancedb
    from lancedb.query import LanceVectorQueryBuilder


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


def probed(found: LanceVectorQueryBuilder, ann: AnnConfig, k: int) -> LanceVectorQueryBuilder:
    """An IVF-PQ search: `nprobes` partitions at least, the candidates re-ranked by full vectors."""
    # no upper bound on probes: a selective prefilter may need far partitions to fill k
    refine = max(1, math.ceil(ann.refine_candidates / k))
    return found.minimum_nprobes(ann.nprobes).maximum_nprobes(0).refine_factor(refine)


def walked(found: LanceVectorQueryBuilder, ann: AnnConfig, k: int) -> LanceVectorQueryBuilder:
    """An HNSW search: `ef` candidates kept while walking the graph, k at least."""
    return found.ef(max(ann.ef, k))


# how a search uses each ANN kind's index, by the names of `store.ANN_QUERIES`
TUNINGS: dict[str, Callable[[LanceVectorQueryBuilder, AnnConfig, int], LanceVectorQueryBuilder]] = {
    "ivf_pq": probed,
    "ivf_hnsw_sq": walked,
}


class LanceTable:
    """A served LanceDB table (`store.ServedTable`); `lance` is LanceDB's table itself."""

    def __init__(self, lance: lancedb.table.Table):
        self.lance, self.name = lance, lance.name

    @property
    def version(self) -> int:
        return self.lance.version

    def count_rows(self) -> int:
        return self.lance.count_rows()

    def read(self, columns: Sequence[str]) -> pa.Table:
        return self.lance.search().select(list(columns)).limit(None).to_arrow()

    def checkout(self, version: int) -> None:
        try:
            self.lance.checkout(version)
        except ValueError:  # LanceDB's "version no longer exists"
            raise MissingVersion(f"table {self.name} has no version {version}") from None

    def tagged(self, tag: str) -> int | None:
        return tagged_version(self.lance, tag)

    def tag(self, tag: str, version: int) -> None:
        if self.tagged(tag) is None:
            try:
                self.lance.tags.create(tag, version)
                return
            except RuntimeError:  # LanceDB's "tag already exists": a release elsewhere made it meanwhile
                if self.tagged(tag) is None:
                    raise
        self.lance.tags.update(tag, version)

    def index_kind(self) -> str:
        return index_kind(self.lance)

    def search(self, query: Query) -> pa.Table:
        where, ann, k = access_filter(query.groups, query.withheld), query.ann, query.k
        found = self.lance.search(np.asarray(query.vector, dtype=np.float32)).distance_type("cosine")
        found = found.select([*query.columns, "_distance"]).limit(k)
        if where is not None:
            found = found.where(where, prefilter=query.prefilter)
        found = found.bypass_vector_index() if query.exact else TUNINGS[ann.kind](found, ann, k)
        return found.to_arrow()

    def distances(
        self, positions: Sequence[int], queries: Mapping[int, np.ndarray]
    ) -> dict[int, dict[str, float]]:
        """LanceDB's own distances: an exact search of a scratch in-memory table holding only those
        rows' vectors, copied from this one."""
        import lancedb

        data = self.lance.take_offsets(list(positions)).select(["chunk_id", "vector"]).to_arrow()
        scratch = lancedb.connect("memory://").create_table("probe", data)
        out = {}
        for i, vector in queries.items():
            query = scratch.search(np.asarray(vector, dtype=np.float32)).distance_type("cosine")
            found = query.select(["chunk_id", "_distance"]).limit(len(positions)).to_arrow()
            out[i] = dict(zip(found["chunk_id"].to_pylist(), found["_distance"].to_pylist()))
        return out


class LanceStore:
    """The embedded LanceDB tables in `db_dir` (a local path or an object store's URL)."""

    def __init__(self, db_dir: AnyPath):
        self.db_dir = db_dir

    def open(self, name: str) -> LanceTable:
        # the reader follows new versions, so a cleanup never pulls files from under it
        try:
            return LanceTable(connect(self.db_dir, timedelta(seconds=5)).open_table(name))
        except ValueError:  # LanceDB's "table not found"
            raise MissingTable(f"{self.db_dir}: no served table {name!r}") from None

    def names(self) -> list[str]:
        if not self.db_dir.exists():
            return []
        db, names, token = connect(self.db_dir, timedelta(0)), [], None
        while True:
            page = db.list_tables(page_token=token)
            names += page.tables
            if not (token := page.page_token):
                return names

    def sync(self, name: str, rows: pa.Table | LazyRows, ann: AnnConfig, retain: timedelta) -> dict:
        return sync_table(self.db_dir, name, rows, ann=ann, retain=retain)
