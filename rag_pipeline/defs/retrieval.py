"""Retrieval stage: exact cosine top-k per strategy for every question."""

import dagster as dg
import pandas as pd
import pyarrow.parquet as pq

from rag_pipeline.defs.embeddings import progress_logger
from rag_pipeline.defs.resources import DataStore, EmbedderResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.incremental import content_version
from rag_pipeline.lib.metrics import MAX_K
from rag_pipeline.lib.retrieval import top_k
from rag_pipeline.lib.storage import vector_matrix
from rag_pipeline.lib.vectorstore import embed_cached


def retrieval_asset(strategy: Strategy) -> dg.AssetsDefinition:
    name = f"retrieval_{strategy.key}"

    @dg.asset(
        name=name,
        group_name="retrieval",
        code_version="dense-exact-v1",
        kinds={"numpy", "parquet"},
        deps=[f"embeddings_{strategy.key}"],
        metadata={"storage_path": f"retrieval/{strategy.name}.parquet", "strategy": strategy.name},
        description=f"Top-{MAX_K} chunks of `{strategy.name}` for every question by exact cosine similarity.",
    )
    def _retrieval(
        context: dg.AssetExecutionContext,
        questions: pd.DataFrame,
        embedder: EmbedderResource,
        store: DataStore,
    ) -> dg.Output:
        model = embedder.get()
        path = store.embeddings_path(model.embedding_version, strategy.name)
        if not path.exists():
            raise FileNotFoundError(
                f"{path}: no embeddings of {strategy.name!r} for embedding_version {model.embedding_version!r}; "
                f"materialize embeddings_{strategy.key} first"
            )
        table = pq.read_table(path)
        index = vector_matrix(table.column("vector"), model.dim)
        chunks = table.drop_columns(["vector", "text_hash"]).to_pandas()
        query_vectors, _, embedded = embed_cached(
            model,
            store.vector_store(model),
            questions["q"].tolist(),
            "query",
            labels=[f"question {q}" for q in questions["question_id"]],
            batch_size=embedder.batch_size,
            progress=progress_logger(context, f"{name} questions"),
        )
        positions, scores = top_k(index, query_vectors, MAX_K)
        hits = chunks.iloc[positions.reshape(-1)].reset_index(drop=True)
        frame = pd.DataFrame(
            {
                "question_id": questions["question_id"].repeat(positions.shape[1]).to_numpy(),
                "rank": list(range(1, positions.shape[1] + 1)) * len(questions),
                "score": scores.reshape(-1).astype(float),
            }
        ).join(hits)
        frame["strategy"] = strategy.name
        frame["retriever"] = "dense"
        frame["embedding_version"] = model.embedding_version
        frame["n_chunks"] = len(chunks)
        return dg.Output(
            frame,
            data_version=dg.DataVersion(content_version(frame, list(frame.columns))),
            metadata={"questions": len(questions), "k": positions.shape[1], "queries_embedded": embedded},
        )

    return _retrieval
