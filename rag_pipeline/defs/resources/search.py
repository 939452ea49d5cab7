"""Retrieval, serving and release settings, and the served tables' store, as resources."""

import hashlib
from pathlib import Path

import dagster as dg

from rag_pipeline.defs.platform.lineage import config_digest
from rag_pipeline.defs.resources.base import FromSettings, setting
from rag_pipeline.defs.resources.data import DataStore
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.evaluation import Budgets, Prices, Ranking, read_prices
from rag_pipeline.lib.retrieval import (
    HttpReranker,
    RetrievalSettings,
    RetrieverSpec,
    make_analyzer,
    parse_retriever,
)
from rag_pipeline.lib.serving import AnnConfig, Store, served_store
from rag_pipeline.settings import BUNDLED_PRICES


@logic
class RetrievalResource(FromSettings):
    """Which retriever configurations run on every strategy, and their settings (see lib/retrieval)."""

    retrievers: list[str] = setting("retrievers")
    analyzer: str = setting("analyzer")  # BM25 tokenizer: character n-grams, or "sudachi" (morphological)
    candidate_k: int = setting("candidate_k")
    rrf_k: float = setting("rrf_k")
    dense_weight: float = setting("dense_weight")  # minmax/zscore fusion: weight of the dense scores
    max_lexical_miss_share: float = 0.1  # the lexical check fails above this share of questions
    rerank_url: str = setting(
        "rerank_url"
    )  # `+rerank` needs it: TEI `/rerank` or a Cohere-style `/v1/rerank`
    rerank_model: str = setting("rerank_model")
    rerank_protocol: str = setting("rerank_protocol")
    rerank_k: int = 20
    context_k: int = setting("context_k")  # what would reach the LLM: at most context_k units...
    context_chars: int = 4000  # ...and this many characters

    def version(self) -> str:
        return config_digest(self.model_dump())

    def reranker(self) -> HttpReranker | None:
        return (
            HttpReranker(self.rerank_url, self.rerank_model, self.rerank_protocol)
            if self.rerank_url
            else None
        )

    def ranking(self) -> Ranking:
        return Ranking(list(self.retrievers), self.settings(), self.reranker(), make_analyzer(self.analyzer))

    def specs(self) -> list[RetrieverSpec]:
        return [parse_retriever(r) for r in self.retrievers]

    def needs_contextual_vectors(self) -> bool:
        return any(s.contextual and s.uses_embedder for s in self.specs())

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


@logic
class ServingResource(FromSettings):
    """The served tables: searched exactly below `ann_min_rows` rows, through an IVF-PQ index above."""

    ann_min_rows: int = setting("ann_min_rows")

    def version(self) -> str:
        return config_digest(self.model_dump())

    def ann(self) -> AnnConfig:
        return AnnConfig(min_rows=self.ann_min_rows)


@logic
class ServedStore(FromSettings):
    """The served tables behind the store seam (`lib/serving/store.py`): `get()` is the store the data
    directory's tables are in (LanceDB's, under `lancedb/`), which opens, syncs, tags and searches them."""

    store: dg.ResourceDependency[DataStore]

    def get(self) -> Store:
        return served_store(self.store.path())


@logic
class ReleaseResource(FromSettings):
    """Which run the application serves, how much worse a new index may be before it is held back, and
    what a configuration may cost (`RAG_BUDGET_*`, None: no budget; at the prices of `RAG_PRICES`, see
    `lib/evaluation/budgets.py`): the verdict chooses within the budgets, the gate serves none over."""

    run: str = setting("release_run")  # strategy/retriever; empty: the report's baseline
    chosen: str = setting("chosen_run")  # what the verdict keeps as chosen; empty: chosen on dev
    k: int = setting("release_k")
    max_drop: float = setting("release_max_drop")
    max_faithful_drop: float = setting("release_max_faithful_drop")
    latency_p95_ms: float | None = setting("budget_latency_p95_ms")
    cost_per_1k: float | None = setting("budget_cost_per_1k")
    prices: str = setting("prices")

    def version(self) -> str:
        # the prices file is budgets_version's; the run kept as chosen the verdict's (evaluation_summary
        # names it)
        return config_digest(self.model_dump(exclude={"prices", "chosen"}))

    def budgets_version(self) -> str:
        """The budgets and the prices file's bytes (`budgets`' settings): an edited price prices again."""
        path = Path(self.prices)
        sha = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
        return config_digest(self.latency_p95_ms, self.cost_per_1k, sha)

    def budgets(self) -> Budgets:
        return Budgets(self.latency_p95_ms, self.cost_per_1k)

    def read_prices(self) -> Prices:
        """The prices; without the bundled file (a package installed without `data/`), none."""
        return read_prices(self.prices, missing_ok=self.prices == str(BUNDLED_PRICES))
