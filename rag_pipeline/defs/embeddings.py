"""Embedding stage: passage vectors per strategy, stored under their embedding_version."""

import time

import dagster as dg
import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs.resources import DataStore, EmbedderResource, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.incremental import content_version
from rag_pipeline.lib.retrievers import contextual_text
from rag_pipeline.lib.storage import vector_column, write_table
from rag_pipeline.lib.vectorstore import embed_cached


def progress_logger(context: dg.AssetExecutionContext, what: str, every_s: float = 10.0):
    """A callback that logs `done/total` and the rate at most every `every_s` seconds, and at the end."""
    started = time.monotonic()
    last = [started]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= every_s:
            last[0] = now
            rate = done / max(now - started, 1e-9)
            context.log.info(f"{what}: embedded {done}/{total} texts ({rate:.1f} texts/s)")

    return report


def vector_problems(matrix: np.ndarray, dim: int) -> list[str]:
    problems = []
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        problems.append(f"shape {matrix.shape}, expected (n, {dim})")
        return problems
    if not np.isfinite(matrix).all():
        problems.append(f"{int((~np.isfinite(matrix).all(axis=1)).sum())} vectors hold NaN or inf")
    norms = np.linalg.norm(matrix, axis=1)
    if len(norms) and np.abs(norms - 1).max() > 1e-3:
        problems.append(f"{int((np.abs(norms - 1) > 1e-3).sum())} vectors are not unit length")
    return problems


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
        model = embedder.get()
        texts, labels = chunks["text"].tolist(), [f"chunk {c}" for c in chunks["chunk_id"]]
        contextual = retrieval.needs_contextual_vectors()
        if contextual:  # the same chunks with their title and heading path in front, for `+ctx` retrievers
            texts += [contextual_text(h, t) for h, t in zip(chunks["heading_path"], chunks["text"])]
            labels += [f"{label} (with context)" for label in labels]
        matrix, hashes, embedded = embed_cached(
            model,
            store.vector_store(model),
            texts,
            "passage",
            labels=labels,
            batch_size=embedder.batch_size,
            progress=progress_logger(context, name),
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
            data_version=dg.DataVersion(content_version(index, ["chunk_id", "text_hash", "version"])),
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
