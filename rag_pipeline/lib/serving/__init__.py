"""The served LanceDB tables: incremental syncs, filtered search, how well they serve, and the live
version applications read."""

from rag_pipeline.lib.serving.live import (
    DB_DIR,
    LIVE,
    NotReleased,
    live_version,
    open_live,
    table_key,
    tag_live,
)
from rag_pipeline.lib.serving.measure import KS, MIN_RECALL, RECALL_K, serving_eval, serving_problems
from rag_pipeline.lib.serving.revoked import (
    RELEASE_DIR,
    REVOKED,
    LiveTable,
    Revocation,
    RevokedError,
    merged,
    narrowed,
    read_revocation,
    write_revocation,
)
from rag_pipeline.lib.serving.search import (
    AnnConfig,
    access_filter,
    index_kind,
    open_table,
    search,
    search_rows,
)
from rag_pipeline.lib.serving.served import KeptResults, Ranking, truth_from_ranking
from rag_pipeline.lib.serving.tables import LazyRows, duplicate_chunk_ids, serving_rows, sync_table

__all__ = [
    "DB_DIR",
    "KS",
    "LIVE",
    "MIN_RECALL",
    "RECALL_K",
    "RELEASE_DIR",
    "REVOKED",
    "AnnConfig",
    "KeptResults",
    "LazyRows",
    "LiveTable",
    "NotReleased",
    "Ranking",
    "Revocation",
    "RevokedError",
    "access_filter",
    "duplicate_chunk_ids",
    "index_kind",
    "live_version",
    "merged",
    "narrowed",
    "open_live",
    "open_table",
    "read_revocation",
    "search",
    "search_rows",
    "serving_eval",
    "serving_problems",
    "serving_rows",
    "sync_table",
    "table_key",
    "tag_live",
    "truth_from_ranking",
    "write_revocation",
]
