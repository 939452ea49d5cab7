"""Retrieval stage: every configured retriever (dense, BM25, fusions, +ctx, +parent) per strategy."""

import dagster as dg
import pandas as pd

from rag_pipeline.defs.io import forward_logs, versioned
from rag_pipeline.defs.resources import DataStore, EmbedderResource, RetrievalResource
from rag_pipeline.lib.access import leaked_rows, readable_units
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.embedders import progress_reporter
from rag_pipeline.lib.incremental_retrieval import retrieve_incremental
from rag_pipeline.lib.lexical import make_analyzer
from rag_pipeline.lib.metrics import relevant_column
from rag_pipeline.lib.questions import asker_groups, questions_from_frame, usable
from rag_pipeline.lib.retrievers import ChunkIndex, lexical_miss_share
from rag_pipeline.lib.storage import read_table, vector_matrix
from rag_pipeline.lib.tokenstore import TokenStore


def retrieval_asset(strategy: Strategy) -> dg.AssetsDefinition:
    name = f"retrieval_{strategy.key}"

    @dg.asset(
        name=name,
        group_name="retrieval",
        code_version="retrieval-v4",
        kinds={"numpy", "parquet"},
        ins={"chunks": dg.AssetIn(f"chunks_{strategy.key}")},
        deps=[f"embeddings_{strategy.key}"],
        metadata={"storage_path": f"retrieval/{strategy.name}.parquet", "strategy": strategy.name},
        check_specs=[
            dg.AssetCheckSpec(
                "lexical_matches",
                asset=name,
                description="BM25 finds at least one chunk sharing a token for all but a small share of "
                "the questions (a tokenizer that cannot split the text finds nothing).",
            ),
            dg.AssetCheckSpec(
                "no_access_leak",
                asset=name,
                blocking=True,
                description="No question is given a unit of a note its asker may not read, at any rank.",
            ),
        ],
        description=f"Ranked chunks of `{strategy.name}` for every question and retriever configuration.",
    )
    def _retrieval(
        context: dg.AssetExecutionContext,
        chunks: pd.DataFrame,
        questions: pd.DataFrame,
        embedder: EmbedderResource,
        retrieval: RetrievalResource,
        store: DataStore,
    ):
        model = embedder.get(store)
        questions = usable(questions)
        askers = {
            qid: asker_groups(row) for qid, row in zip(questions["question_id"], questions.itertuples())
        }
        path = store.embeddings_path(model.embedding_version, strategy.name)
        if not path.exists():
            raise FileNotFoundError(
                f"{path}: no embeddings of {strategy.name!r} for embedding_version "
                f"{model.embedding_version!r}; materialize embeddings_{strategy.key} first"
            )
        table = read_table(path)
        if table.column("chunk_id").to_pylist() != chunks["chunk_id"].tolist():
            raise ValueError(
                f"{path} is older than chunks_{strategy.key}: materialize embeddings_{strategy.key}"
            )
        contextual = "vector_ctx" in table.column_names
        analyzer = make_analyzer(retrieval.analyzer)
        index = ChunkIndex(
            chunks=chunks,
            vectors=vector_matrix(table.column("vector"), model.dim),
            ctx_vectors=vector_matrix(table.column("vector_ctx"), model.dim) if contextual else None,
            analyzer=analyzer,
            token_store=TokenStore(store.path("tokens"), analyzer),
        )
        query_texts = questions["q"].tolist()
        with forward_logs(context):
            query_vectors, embedded = embedder.embed_questions(
                store, questions, progress_reporter(context.log.info, f"{name} questions")
            )
        frame = retrieve_incremental(
            index,
            retrieval.retrievers,
            questions["question_id"].tolist(),
            query_vectors,
            query_texts,
            retrieval.settings(),
            retrieval.reranker(),
            cache_dir=store.path("candidates", strategy.name),
            version=model.embedding_version,
            groups=[askers[q] for q in questions["question_id"]],
        )
        _, spans = questions_from_frame(questions)
        frame["n_relevant"] = relevant_column(frame, spans, chunks)
        frame["n_readable"] = readable_units(frame, chunks, askers)
        frame["strategy"] = strategy.name
        frame["embedding_version"] = model.embedding_version
        frame["analyzer"] = analyzer.version
        frame["n_chunks"] = len(chunks)
        # where the numbers come from, carried to every report
        frame["commit"] = chunks["commit"].iloc[0] if len(chunks) else ""
        frame["questions_sha256"] = questions["questions_sha256"].iloc[0] if len(questions) else ""
        miss = lexical_miss_share(index, query_texts)
        leaks = leaked_rows(frame, askers)
        yield versioned(
            frame,
            questions=len(questions),
            retrievers=", ".join(retrieval.retrievers),
            analyzer=analyzer.version,
            queries_embedded=embedded,
            lexical_miss_share=miss,
        )
        yield dg.AssetCheckResult(
            check_name="lexical_matches",
            passed=miss <= retrieval.max_lexical_miss_share,
            metadata={"lexical_miss_share": miss, "threshold": retrieval.max_lexical_miss_share},
        )
        yield dg.AssetCheckResult(
            check_name="no_access_leak",
            passed=leaks.empty,
            metadata={
                "leaked_units": len(leaks),
                "questions": dg.MetadataValue.md(
                    ", ".join(sorted(set(leaks["question_id"]))) if len(leaks) else "none"
                ),
            },
        )

    return _retrieval
