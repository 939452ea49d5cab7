"""Retrieval stage: every configured retriever (dense, BM25, fusions, +ctx, +parent) per strategy."""

from collections.abc import Mapping

import dagster as dg

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.io import forward_logs
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, EmbedderResource, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import content_version, leaked_rows, readable_units
from rag_pipeline.lib.embedding import progress_reporter
from rag_pipeline.lib.evaluation import relevant_column
from rag_pipeline.lib.questions import asker_groups, questions_from_frame, usable
from rag_pipeline.lib.retrieval import (
    ChunkIndex,
    Queries,
    TokenStore,
    lexical_miss_share,
    make_analyzer,
    retrieve_incremental,
)


def retrieval_asset(strategy: Strategy, resources: Mapping[str, object]) -> dg.AssetsDefinition:
    name = lanes.lane_key("retrieval", strategy)
    relative = lanes.lane_path("retrieval", strategy)
    lexical = (
        "BM25 finds at least one chunk sharing a token for all but a small share of the questions "
        "(a tokenizer that cannot split the text finds nothing)."
    )
    leak = "No question is given a unit of a note its asker may not read, at any rank."

    @stage_asset(
        name,
        group="retrieval",
        # the query embedder and every retrieval setting (retrievers, analyzer, reranker, depths)
        config=lambda embedder, retrieval: config_digest(embedder.version(), retrieval.version()),
        resources=resources,
        kinds=("numpy", "parquet"),
        deps=[lanes.lane_key("chunks", strategy), lanes.lane_key("embeddings", strategy), "questions"],
        strategy=strategy,
        checks=[("lexical_matches", lexical, False), ("no_access_leak", leak, True)],
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
        askers = {
            qid: asker_groups(row) for qid, row in zip(questions["question_id"], questions.itertuples())
        }
        vectors, ctx_vectors = lanes.read_vectors(
            store, model.embedding_version, model.dim, strategy, chunks["chunk_id"].tolist(), contextual=True
        )
        analyzer = make_analyzer(retrieval.analyzer)
        index = ChunkIndex(
            chunks=chunks,
            vectors=vectors,
            ctx_vectors=ctx_vectors,
            analyzer=analyzer,
            token_store=TokenStore(store.path("tokens"), analyzer),
        )
        query_texts = questions["q"].tolist()
        with forward_logs(context):
            query_vectors, embedded = embedder.embed_questions(
                questions, progress_reporter(context.log.info, f"{name} questions")
            )
        ids = questions["question_id"].tolist()
        frame = retrieve_incremental(
            index,
            retrieval.retrievers,
            Queries(ids, query_vectors, query_texts, [askers[q] for q in ids]),
            retrieval.settings(),
            retrieval.reranker(),
            cache_dir=store.path("candidates", strategy.name),
            version=model.embedding_version,
        )
        _, spans = questions_from_frame(questions)
        frame["n_relevant"] = relevant_column(frame, spans, chunks)
        frame["n_readable"] = readable_units(frame, chunks, askers)
        frame["strategy"] = strategy.name
        frame["embedding_version"] = model.embedding_version
        frame["analyzer"] = analyzer.version
        frame["n_chunks"] = len(chunks)
        frame["questions_sha256"] = questions["questions_sha256"].iloc[0] if len(questions) else ""
        miss = lexical_miss_share(index, query_texts)
        leaks = leaked_rows(frame, askers)
        path = store.write(frame, relative)
        checks = [
            dg.AssetCheckResult(
                check_name="lexical_matches",
                passed=miss <= retrieval.max_lexical_miss_share,
                metadata={"lexical_miss_share": miss, "threshold": retrieval.max_lexical_miss_share},
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
        return materialized(
            content_version(frame, list(frame.columns)),
            {
                "questions": len(questions),
                "retrievers": ", ".join(retrieval.retrievers),
                "analyzer": analyzer.version,
                "queries_embedded": embedded,
                "lexical_miss_share": miss,
            },
            files=[path],
            checks=checks,
        )

    return _retrieval
