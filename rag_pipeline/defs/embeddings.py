"""Embedding stage: passage vectors per strategy, stored under their embedding_version; with
`RAG_SHARDS` > 1 a step per shard embeds what its notes' chunks lack into the vector store (any
worker takes each, side by side), and the lane's step writes the lane's files from the store."""

import time
from collections.abc import Mapping

import dagster as dg
import pandas as pd

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.io import forward_logs
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, EmbedderResource, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import VERSION_FILE, content_version
from rag_pipeline.lib.embedding import Passages, passage_hashes, progress_reporter
from rag_pipeline.lib.embedding.lanefile import BUCKETS, LaneWriter, bucket_paths


def vectors_config(embedder: EmbedderResource, retrieval: RetrievalResource) -> str:
    """The embedder, and whether `+ctx` retrievers need the contextual vectors too."""
    return config_digest(embedder.version(), retrieval.needs_contextual_vectors())


def embedding_assets(
    strategy: Strategy, resources: Mapping[str, object], shards: int
) -> list[dg.AssetsDefinition]:
    """The strategy's embeddings: one step, or a step per shard and the lane's step after them."""
    parts = (
        [embeddings_shard_asset(strategy, k, shards, resources) for k in range(shards)] if shards > 1 else []
    )
    return [*parts, embeddings_asset(strategy, resources, [p.key.path[-1] for p in parts])]


def embeddings_shard_asset(
    strategy: Strategy, shard: int, shards: int, resources: Mapping[str, object]
) -> dg.AssetsDefinition:
    name = lanes.shard_key("embeddings", strategy, shard)

    @stage_asset(
        name,
        group="embeddings",
        config=vectors_config,
        resources=resources,
        deps=[lanes.shard_key("chunks", strategy, shard)],
        strategy=strategy,
        first=True,  # side by side with the other shards, before the steps that can wait
        description=f"The passage vectors of the `{strategy.name}` chunks in shard {shard} of {shards}, "
        "embedded into the vector store (`vectors/`), which the lane's embeddings then read.",
    )
    def _shard(
        context: dg.AssetExecutionContext,
        embedder: EmbedderResource,
        retrieval: RetrievalResource,
        store: DataStore,
    ) -> dg.MaterializeResult:
        chunks = store.read(lanes.shard_path(strategy, shard, shards))
        texts = Passages(
            chunks["text"].tolist(), chunks["heading_path"].tolist(), retrieval.needs_contextual_vectors()
        )
        hashes = passage_hashes(embedder.get(), chunks, texts)
        ids = chunks["chunk_id"].tolist()
        started = time.monotonic()
        with forward_logs(context):
            _, embedded = embedder.embed_missing(
                [texts[i] for i in range(len(texts))],
                "passage",
                [f"chunk {ids[i % len(ids)]}" for i in range(len(texts))],
                progress_reporter(context.log.info, name),
            )
        context.log.info(
            f"{name}: {embedded} texts sent to the embedder, {len(texts) - embedded} vectors reused"
        )
        index = pd.DataFrame({"text_hash": hashes})
        return materialized(
            content_version(index, list(index.columns)),
            {
                "vectors": len(texts),
                "texts_embedded": embedded,
                "embed_seconds": round(time.monotonic() - started, 3) if embedded else 0.0,
                "vectors_reused": len(texts) - embedded,
            },
            # the store it filled, recorded so that a shard made in another data directory (one
            # instance, RAG_DATA_DIR changed) or whose store was deleted is embedded again by its own
            # step, not left to the lane's one step
            files=[embedder.vector_store().dir / VERSION_FILE],
        )

    return _shard


def embeddings_asset(
    strategy: Strategy, resources: Mapping[str, object], shards: list[str] = ()
) -> dg.AssetsDefinition:
    """The lane's vectors files; after `shards` (asset names) the store holds every vector."""
    name = lanes.lane_key("embeddings", strategy)

    @stage_asset(
        name,
        group="embeddings",
        config=vectors_config,
        resources=resources,
        deps=[lanes.lane_key("chunks", strategy), *shards],
        strategy=strategy,
        checks=[
            (
                "vectors_valid",
                "One vector per chunk, of the declared dimension, finite and of unit norm.",
                True,
            )
        ],
        description=f"Passage vectors of the `{strategy.name}` chunks, in the directory "
        f"`embeddings/<version key>/{strategy.name}.parquet/` (a file per bucket of notes).",
    )
    def _embeddings(
        context: dg.AssetExecutionContext,
        embedder: EmbedderResource,
        retrieval: RetrievalResource,
        store: DataStore,
    ) -> dg.MaterializeResult:
        chunks = store.read(lanes.lane_path("chunks", strategy))
        model = embedder.get()
        ids = chunks["chunk_id"].tolist()
        contextual = retrieval.needs_contextual_vectors()
        n = len(chunks)
        texts = Passages(chunks["text"].tolist(), chunks["heading_path"].tolist(), contextual)
        hashes = passage_hashes(model, chunks, texts)
        lane = LaneWriter(
            store.path(lanes.embeddings_path(model.embedding_version, strategy)),
            ids,
            chunks["note"].tolist(),
            hashes[:n],
            hashes[n:] if contextual else None,
            model.embedding_version,
            model.dim,
        )
        # only the buckets of changed notes are written, and only the vectors their files lack are
        # looked up (or embedded); retrieval and the index read only the row groups of new chunks
        needed = lane.needed()
        # the characters of the texts the store lacks, each once, and the time their embedding
        # takes: the rate `make run`'s plan estimates the next embedding with
        distinct = {hashes[i]: i for i in needed}
        stored = embedder.vector_store().contains(list(distinct))
        chars = sum(len(texts[i]) for i, found in zip(distinct.values(), stored) if not found)
        started = time.monotonic()
        with forward_logs(context):
            _, embedded = embedder.embed_missing(
                [texts[i] for i in needed],
                "passage",
                [f"chunk {ids[i % n]}" + (" (with context)" if i >= n else "") for i in needed],
                progress_reporter(context.log.info, name),
            )
        seconds = time.monotonic() - started
        problems, written = lane.write(embedder.vector_store())
        path = lane.directory
        context.log.info(
            f"{name}: {embedded} texts sent to the embedder, {len(texts) - embedded} vectors reused "
            f"({model.embedding_version}); {written} of {BUCKETS} files written"
        )
        index = pd.DataFrame({"chunk_id": ids * (len(texts) // n if n else 1), "text_hash": hashes}).assign(
            version=model.embedding_version
        )
        check = dg.AssetCheckResult(
            check_name="vectors_valid",
            passed=not problems,
            metadata={"problems": "; ".join(problems[:20]) or "none"},
        )
        return materialized(
            content_version(index, list(index.columns)),
            {
                "embedding_version": model.embedding_version,
                "path": dg.MetadataValue.path(str(path)),
                "vectors": len(texts),
                "contextual_vectors": contextual,
                "dim": model.dim,
                "texts_embedded": embedded,
                "chars_embedded": chars,
                "embed_seconds": round(seconds, 3) if embedded else 0.0,
                "vectors_reused": len(texts) - embedded,
                "files_written": written,
            },
            files=bucket_paths(path),
            checks=[check],
        )

    return _embeddings
