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
from rag_pipeline.lib.embedding import Passages, passage_hashes, plan_lane, progress_reporter
from rag_pipeline.lib.embedding.lanefile import BUCKETS, bucket_paths

VALID_RULE = "One vector per chunk, of the declared dimension, finite and of unit norm."


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
        checks=[("vectors_valid", VALID_RULE, True)],
        logic=[vectors_check],
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
        model, contextual = embedder.get(), retrieval.needs_contextual_vectors()
        directory = store.path(lanes.embeddings_path(model.embedding_version, strategy))
        plan = plan_lane(model, chunks, contextual, directory)
        chars = plan.new_chars(embedder.vector_store().contains)
        started = time.monotonic()
        with forward_logs(context):
            _, embedded = embedder.embed_missing(*plan.missing(), progress_reporter(context.log.info, name))
        seconds = time.monotonic() - started
        problems, written = plan.lane.write(embedder.vector_store())
        n, path = len(plan.texts), plan.lane.directory
        context.log.info(
            f"{name}: {embedded} texts sent to the embedder, {n - embedded} vectors reused "
            f"({model.embedding_version}); {written} of {BUCKETS} files written"
        )
        return materialized(
            content_version(plan.index(model.embedding_version), ["chunk_id", "text_hash", "version"]),
            {
                "embedding_version": model.embedding_version,
                "path": dg.MetadataValue.path(str(path)),
                "vectors": n,
                "contextual_vectors": contextual,
                "dim": model.dim,
                "texts_embedded": embedded,
                "chars_embedded": chars,
                "embed_seconds": round(seconds, 3) if embedded else 0.0,
                "vectors_reused": n - embedded,
                "files_written": written,
            },
            files=bucket_paths(path),
            checks=[vectors_check(problems)],
        )

    return _embeddings


def vectors_check(problems: list[str]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name="vectors_valid",
        passed=not problems,
        metadata={"problems": "; ".join(problems[:20]) or "none"},
    )
