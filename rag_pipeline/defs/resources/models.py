"""The model-backed resources: the passage and query embedder, the answerer and the judge."""

import hashlib
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
from pydantic import PrivateAttr

from rag_pipeline.defs.platform.lineage import config_digest
from rag_pipeline.defs.platform.runs import EMBEDDER_TAG
from rag_pipeline.defs.resources.base import FromSettings, setting
from rag_pipeline.defs.resources.data import DataStore
from rag_pipeline.lib.answers import LLM
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.embedding import Embedder, Kind, Progress, VectorStore, embed_missing
from rag_pipeline.lib.judging import Judge, make_judge
from rag_pipeline.settings import SettingsError
from rag_pipeline.settings.models import JUDGE_OPTIONS, AnswerConfig, EmbedderConfig, backend_options

# where, how fast or patiently vectors are fetched: no part of what they are (the model's identity,
# its digest from the server among it, is in `embedding_version`, and compared across processes)
FETCHING = {"store", "url", "batch_size", "concurrency", "timeout", "max_retries", "threads", "api_key_env"}


@logic
class EmbedderResource(FromSettings, EmbedderConfig):
    """The passage and query embedder (`EmbedderConfig`), its vectors under the data directory."""

    store: dg.ResourceDependency[DataStore]
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
        model = self.embedder(self.store.path())
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
class AnswerResource(FromSettings, AnswerConfig):
    """The answerer (`AnswerConfig`), its settings in the answers' code version."""

    def version(self) -> str:
        """The settings the answers depend on (not how patiently they are fetched); the prompt and
        the answerer's code are in the code version (this class is logic)."""
        return config_digest(
            self.model_dump(include={"backend", "url", "model", "runs", "repeats", "max_reply"})
        )

    def get(self) -> LLM:
        return self.llm()


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
        options = backend_options(JUDGE_OPTIONS, self)
        return make_judge(self.backend, self.store.path("judge_cache"), **options)

    def times(self, judge: Judge) -> int:
        return self.repeats or judge.default_repeats
