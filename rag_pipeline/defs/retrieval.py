"""Retrieval stage: every configured retriever (dense, BM25, fusions, +ctx, +parent) per strategy."""

from collections.abc import Mapping

import dagster as dg

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.io import forward_logs
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, EmbedderResource, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import content_version
from rag_pipeline.lib.embedding import progress_reporter
from rag_pipeline.lib.evaluation import Ranked, ranked_lane
from rag_pipeline.lib.questions import usable

LEXICAL_RULE = (
    "BM25 finds at least one chunk sharing a token for all but a small share of the questions "
    "(a tokenizer that cannot split the text finds nothing)."
)
LEAK_RULE = "No question is given a unit of a note its asker may not read, at any rank."


def retrieval_asset(strategy: Strategy, resources: Mapping[str, object]) -> dg.AssetsDefinition:
    name = lanes.lane_key("retrieval", strategy)
    relative = lanes.lane_path("retrieval", strategy)

    @stage_asset(
        name,
        group="retrieval",
        # the query embedder and every retrieval setting (retrievers, analyzer, reranker, depths)
        config=lambda embedder, retrieval: config_digest(embedder.version(), retrieval.version()),
        resources=resources,
        kinds=("numpy", "parquet"),
        deps=[lanes.lane_key("chunks", strategy), lanes.lane_key("embeddings", strategy), "questions"],
        strategy=strategy,
        checks=[("lexical_matches", LEXICAL_RULE, False), ("no_access_leak", LEAK_RULE, True)],
        logic=[lane_checks],
        description=f"Ranked chunks of `{strategy.name}` for every question and retriever configuration.",
    )
    def _retrieval(
        context: dg.AssetExecutionContext,
        embedder: EmbedderResource,
        retrieval: RetrievalResource,
        store: DataStore,
    ):
        chunks = store.read(lanes.lane_path("chunks", strategy))
        questions = usable(store.read(lanes.QUESTIONS))
        model = embedder.get()
        ids = chunks["chunk_id"].tolist()
        vectors = lanes.read_vectors(
            store, model.embedding_version, model.dim, strategy, ids, contextual=True
        )
        with forward_logs(context):
            query_vectors, embedded = embedder.embed_questions(
                questions, progress_reporter(context.log.info, f"{name} questions")
            )
        ranking, version = retrieval.ranking(), model.embedding_version
        ranked = ranked_lane(
            strategy.name, chunks, vectors, questions, query_vectors, ranking, store.path(), version
        )
        path = store.write(ranked.frame, relative)
        return materialized(
            content_version(ranked.frame, list(ranked.frame.columns)),
            {
                "questions": len(questions),
                "retrievers": ", ".join(retrieval.retrievers),
                "analyzer": ranking.analyzer.version,
                "queries_embedded": embedded,
                "lexical_miss_share": ranked.lexical_miss,
            },
            files=[path],
            checks=lane_checks(ranked, retrieval.max_lexical_miss_share),
        )

    return _retrieval


def lane_checks(ranked: Ranked, max_miss: float) -> list[dg.AssetCheckResult]:
    leaks = ranked.leaks
    return [
        dg.AssetCheckResult(
            check_name="lexical_matches",
            passed=ranked.lexical_miss <= max_miss,
            metadata={"lexical_miss_share": ranked.lexical_miss, "threshold": max_miss},
        ),
        dg.AssetCheckResult(
            check_name="no_access_leak",
            passed=leaks.empty,
            metadata={
                "leaked_units": len(leaks),
                "questions": dg.MetadataValue.md(
                    ", ".join(sorted(set(leaks["question_id"]))) if len(leaks) else "none"
                ),
            },
        ),
    ]
