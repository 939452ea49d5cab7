"""Retrievers over one strategy's chunks: exact dense top-k, BM25, fusions, `+ctx`, `+parent`,
`+rerank`, and retrieval that costs what changed."""

from rag_pipeline.lib.retrieval.chunk_index import ChunkIndex
from rag_pipeline.lib.retrieval.dense import top_k
from rag_pipeline.lib.retrieval.fusion import merge_parents, normalized, rrf, score_fusion
from rag_pipeline.lib.retrieval.incremental import retrieve_incremental
from rag_pipeline.lib.retrieval.lexical import ANALYZERS, BM25, Analyzer, char_ngrams, make_analyzer
from rag_pipeline.lib.retrieval.rerank import HttpReranker, RerankError
from rag_pipeline.lib.retrieval.retrievers import (
    DEFAULT_RETRIEVERS,
    RANKERS,
    Queries,
    RetrievalSettings,
    RetrieverSpec,
    base_hits,
    lexical_miss_share,
    parent_spans,
    parse_retriever,
    plan,
    ranked_hits,
    retrieve,
)
from rag_pipeline.lib.retrieval.tokens import TokenStore

__all__ = [
    "ANALYZERS",
    "BM25",
    "DEFAULT_RETRIEVERS",
    "RANKERS",
    "Analyzer",
    "ChunkIndex",
    "HttpReranker",
    "Queries",
    "RerankError",
    "RetrievalSettings",
    "RetrieverSpec",
    "TokenStore",
    "base_hits",
    "char_ngrams",
    "lexical_miss_share",
    "make_analyzer",
    "merge_parents",
    "normalized",
    "parent_spans",
    "parse_retriever",
    "plan",
    "ranked_hits",
    "retrieve",
    "retrieve_incremental",
    "rrf",
    "score_fusion",
    "top_k",
]
