"""Embedding stage: passage vectors per strategy, stored under their embedding_version."""

import dagster as dg
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs.io import data_version, forward_logs
from rag_pipeline.defs.resources import DataStore, EmbedderResource, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.embedders import progress_reporter, vector_problems
from rag_pipeline.lib.retrievers import contextual_text
from rag_pipeline.lib.storage import vector_column, write_table


def embeddings_asset(strategy: Strategy) -> dg.AssetsDefinition:
    name = f"embeddings_{strategy.key}"

    @dg.asset(
        name=name,
        group_name="embeddings",
        code_version="embeddings-v1",
        kinds={"parquet"},
        ins={"chunks": dg.AssetIn(f"chunks_{strategy.key}")},
        metadata={"strategy": strategy.name},
        check_specs=[
            dg.AssetCheckSpec(
                "vectors_valid",
                asset=name,
                blocking=True,
                description="One vector per chunk, of the declared dimension, finite and of unit norm.",
            )
        ],
        description=f"Passage vectors of the `{strategy.name}` chunks, under `embeddings/<embedding_version>/`.",
    )
    def _embeddings(
        context: dg.AssetExecutionContext,
        chunks: pd.DataFrame,
        embedder: EmbedderResource,
        retrieval: RetrievalResource,
        store: DataStore,
    ) -> dg.MaterializeResult:
        model = embedder.get(store)
        texts, labels = chunks["text"].tolist(), [f"chunk {c}" for c in chunks["chunk_id"]]
        contextual = retrieval.needs_contextual_vectors()
        if contextual:  # the same chunks with their title and heading path in front, for `+ctx` retrievers
            texts += [contextual_text(h, t) for h, t in zip(chunks["heading_path"], chunks["text"])]
            labels += [f"{label} (with context)" for label in labels]
        with forward_logs(context):
            matrix, hashes, embedded = embedder.embed(
                store, texts, "passage", labels, progress_reporter(context.log.info, name)
            )
        n = len(chunks)
        columns = {
            "chunk_id": chunks["chunk_id"].tolist(),
            "text_hash": hashes[:n],
            "vector": vector_column(matrix[:n]),
        }
        if contextual:
            columns |= {"text_hash_ctx": hashes[n:], "vector_ctx": vector_column(matrix[n:])}
        table = pa.table(columns).replace_schema_metadata(
            {"embedding_version": model.embedding_version, "dim": str(model.dim)}
        )
        path = store.embeddings_path(model.embedding_version, strategy.name)
        write_table(table, path)
        context.log.info(
            f"{name}: {embedded} texts sent to the embedder, {len(texts) - embedded} vectors reused "
            f"({model.embedding_version})"
        )
        problems = vector_problems(matrix, model.dim)
        if len(matrix) != len(texts):
            problems.append(f"{len(matrix)} vectors for {len(texts)} texts")
        index = pd.DataFrame(
            {"chunk_id": chunks["chunk_id"].tolist() * (len(texts) // n if n else 1), "text_hash": hashes}
        ).assign(version=model.embedding_version)
        return dg.MaterializeResult(
            data_version=data_version(index),
            metadata={
                "embedding_version": model.embedding_version,
                "path": dg.MetadataValue.path(str(path)),
                "vectors": len(matrix),
                "contextual_vectors": contextual,
                "dim": model.dim,
                "texts_embedded": embedded,
                "vectors_reused": len(texts) - embedded,
            },
            check_results=[
                dg.AssetCheckResult(passed=not problems, metadata={"problems": "; ".join(problems) or "none"})
            ],
        )

    return _embeddings
