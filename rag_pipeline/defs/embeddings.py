"""Embedding stage: passage vectors per strategy, stored under their embedding_version."""

from collections.abc import Mapping

import dagster as dg
import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs import lanes
from rag_pipeline.defs.io import forward_logs
from rag_pipeline.defs.lineage import code_version, config_digest, materialized, reuse
from rag_pipeline.defs.resources import DataStore, EmbedderResource, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import (
    content_version,
    parquet_file,
    read_table,
    vector_column,
    vector_matrix,
    write_table,
)
from rag_pipeline.lib.embedding import progress_reporter, vector_problems
from rag_pipeline.lib.retrieval import contextual_text


def embeddings_config(embedder: EmbedderResource, retrieval: RetrievalResource) -> str:
    """The embedder, and whether `+ctx` retrievers need the contextual vectors too."""
    return config_digest(embedder.version(), retrieval.needs_contextual_vectors())


def embeddings_asset(strategy: Strategy, resources: Mapping[str, object]) -> dg.AssetsDefinition:
    name = lanes.lane_key("embeddings", strategy)

    @dg.asset(
        name=name,
        group_name="embeddings",
        code_version=code_version(
            "embeddings-v2", embeddings_config(resources["embedder"], resources["retrieval"])
        ),
        kinds={"parquet"},
        deps=[lanes.lane_key("chunks", strategy)],
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
        embedder: EmbedderResource,
        retrieval: RetrievalResource,
        store: DataStore,
    ) -> dg.MaterializeResult:
        config = embeddings_config(embedder, retrieval)
        if (kept := reuse(context, config)) is not None:
            return kept
        chunks = store.read(lanes.lane_path("chunks", strategy), columns=["chunk_id", "text", "heading_path"])
        model = embedder.get()
        texts, labels = chunks["text"].tolist(), [f"chunk {c}" for c in chunks["chunk_id"]]
        contextual = retrieval.needs_contextual_vectors()
        if contextual:  # the same chunks with their title and heading path in front, for `+ctx` retrievers
            texts += [contextual_text(h, t) for h, t in zip(chunks["heading_path"], chunks["text"])]
            labels += [f"{label} (with context)" for label in labels]
        with forward_logs(context):
            matrix, hashes, embedded = embedder.embed(
                texts, "passage", labels, progress_reporter(context.log.info, name)
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
        path = store.path(lanes.embeddings_path(model.embedding_version, strategy))
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
        check = dg.AssetCheckResult(
            check_name="vectors_valid",
            passed=not problems,
            metadata={"problems": "; ".join(problems) or "none"},
        )
        return materialized(
            content_version(index, list(index.columns)),
            {
                "embedding_version": model.embedding_version,
                "path": dg.MetadataValue.path(str(path)),
                "vectors": len(matrix),
                "contextual_vectors": contextual,
                "dim": model.dim,
                "texts_embedded": embedded,
                "vectors_reused": len(texts) - embedded,
            },
            config=config,
            files=[path],
            checks=[check],
        )

    return _embeddings


def read_vectors(
    store: DataStore,
    embedding_version: str,
    dim: int,
    strategy: Strategy,
    chunk_ids: list[str],
    contextual: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The strategy's passage vectors (and contextual ones, when asked and built) in the order of
    `chunk_ids`, from its embeddings file; an error naming the asset to materialize when the file is
    missing or holds other chunks."""
    path = store.path(lanes.embeddings_path(embedding_version, strategy))
    asset = lanes.lane_key("embeddings", strategy)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no embeddings of {strategy.name!r} for embedding_version {embedding_version!r}; "
            f"materialize {asset} first"
        )
    columns = ["chunk_id", "vector"] + (["vector_ctx"] if contextual else [])
    names = set(parquet_file(path).schema_arrow.names)
    table = read_table(path, columns=[c for c in columns if c in names])
    if table.column("chunk_id").to_pylist() != chunk_ids:
        raise ValueError(
            f"{path} holds other chunks than {lanes.lane_key('chunks', strategy)}: materialize {asset}"
        )
    ctx = vector_matrix(table.column("vector_ctx"), dim) if "vector_ctx" in table.column_names else None
    return vector_matrix(table.column("vector"), dim), ctx
