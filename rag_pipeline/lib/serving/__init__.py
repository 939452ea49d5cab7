"""The served tables behind one seam (`store`: LanceDB's in `lance`): incremental syncs, filtered
search, how well they serve, and the live version applications read."""

from rag_pipeline.lib.serving.lance import LanceStore, access_filter
from rag_pipeline.lib.serving.live import (
    NotReleased,
    live_version,
    open_live,
    served_store,
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
from rag_pipeline.lib.serving.rows import LazyRows, serving_rows
from rag_pipeline.lib.serving.search import search, search_rows
from rag_pipeline.lib.serving.served import KeptResults, Ranking, truth_from_ranking
from rag_pipeline.lib.serving.store import (
    DB_DIR,
    DEFAULT_RETAIN,
    LIVE,
    AnnConfig,
    MissingTable,
    MissingVersion,
    ServedTable,
    Store,
    duplicate_chunk_ids,
)
from rag_pipeline.lib.serving.tables import sync_table

__all__ = [
    "DB_DIR",
    "DEFAULT_RETAIN",
    "KS",
    "LIVE",
    "MIN_RECALL",
    "RECALL_K",
    "RELEASE_DIR",
    "REVOKED",
    "AnnConfig",
    "KeptResults",
    "LanceStore",
    "LazyRows",
    "LiveTable",
    "MissingTable",
    "MissingVersion",
    "NotReleased",
    "Ranking",
    "Revocation",
    "RevokedError",
    "ServedTable",
    "Store",
    "access_filter",
    "duplicate_chunk_ids",
    "live_version",
    "merged",
    "narrowed",
    "open_live",
    "read_revocation",
    "search",
    "search_rows",
    "served_store",
    "serving_eval",
    "serving_problems",
    "serving_rows",
    "sync_table",
    "table_key",
    "tag_live",
    "truth_from_ranking",
    "write_revocation",
]
