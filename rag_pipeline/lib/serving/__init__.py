"""The served LanceDB tables: incremental syncs, filtered search, and how well they serve."""

from rag_pipeline.lib.serving.measure import KS, MIN_RECALL, RECALL_K, serving_eval, serving_problems
from rag_pipeline.lib.serving.search import AnnConfig, index_kind, open_table, search
from rag_pipeline.lib.serving.served import KeptResults, Ranking, truth_from_ranking
from rag_pipeline.lib.serving.tables import serving_rows, sync_table

__all__ = [
    "KS",
    "MIN_RECALL",
    "RECALL_K",
    "AnnConfig",
    "KeptResults",
    "Ranking",
    "index_kind",
    "open_table",
    "search",
    "serving_eval",
    "serving_problems",
    "serving_rows",
    "sync_table",
    "truth_from_ranking",
]
