"""Chunk stage: one asset per strategy, so each chunker has its own code version; with `RAG_SHARDS`
> 1, one per shard of the strategy's notes (any worker takes each) and one that joins them."""

from functools import partial

import dagster as dg
import pandas as pd

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.internals.reads import check_passed
from rag_pipeline.defs.platform.lineage import config_digest, last_materialization, materialized
from rag_pipeline.defs.resources import DataStore
from rag_pipeline.lib.chunking import NOTE_VERSIONS, Strategy, chunk_lane, unchecked_coverage
from rag_pipeline.lib.core import content_version, joined_in_order, note_buckets
from rag_pipeline.lib.core.fingerprint import logic

REPRODUCE = "chunks_reproduce_notes"
CHUNKS_CONTENT = ["chunk_id", "commit"]  # the commit too: it is what the served rows say their text is from


def chunk_assets(strategy: Strategy, shards: int) -> list[dg.AssetsDefinition]:
    """The strategy's chunks: one step, or a step per shard and the one that joins their files."""
    if shards == 1:
        return [chunks_asset(strategy)]
    return [
        *(chunks_asset(strategy, (k, shards)) for k in range(shards)),
        joined_chunks_asset(strategy, shards),
    ]


def chunks_asset(strategy: Strategy, shard: tuple[int, int] | None = None) -> dg.AssetsDefinition:
    """The chunks of the strategy's notes, or of the notes of `shard` (its number, of how many)."""
    if shard is None:
        name, relative, which = lanes.lane_key("chunks", strategy), lanes.lane_path("chunks", strategy), ""
    else:
        name, relative = lanes.shard_key("chunks", strategy, shard[0]), lanes.shard_path(strategy, *shard)
        which = f" in shard {shard[0]} of {shard[1]}"
    covers = "." if strategy.overlapping else " and do not overlap."

    @stage_asset(
        name,
        group="chunks",
        deps=["cleaned_notes"],
        # which notes a shard holds
        config=(lambda: config_digest(shard)) if shard else None,
        strategy=strategy,
        first=shard is not None,  # the shards lead to the embedding, the long pole
        checks=[
            (
                REPRODUCE,
                f"Each chunk's text is its span of the cleaned note; the spans leave no text out{covers}",
                True,
            )
        ],
        description=f"Chunks of every note{which} by the `{strategy.name}` strategy ({strategy.version}).",
    )
    def _chunks(context: dg.AssetExecutionContext, store: DataStore):
        # the notes' versions; the texts and sections of only the notes rebuilt are read
        versions = store.read(lanes.CLEANED_NOTES, columns=NOTE_VERSIONS)
        if shard is not None:
            versions = versions[note_buckets(versions["note"].tolist(), shard[1]) == shard[0]].reset_index(
                drop=True
            )
        previous = store.previous(relative)
        done = chunk_lane(strategy, previous, versions, partial(cleaned_notes, store))
        frame = done.frame
        context.log.info(f"{name}: {done.counts}")
        # rows kept from a file whose check passed were checked against the same note texts
        if previous_passed(context, previous):
            skip, notes = done.changes.unchanged, done.rebuilt
        else:
            mine = [("note", "in", versions["note"].tolist())] if shard is not None else None
            skip, notes = (), [store.read(lanes.CLEANED_NOTES, columns=["note", "text"], filters=mine)]
        problems = unchecked_coverage(frame, notes, strategy.overlapping, skip)
        path = store.write(frame, relative, row_group_size=lanes.CHUNKS_PER_GROUP)
        check = dg.AssetCheckResult(
            check_name="chunks_reproduce_notes",
            passed=not problems,
            metadata={"problems": dg.MetadataValue.md("\n".join(problems[:50]) or "none")},
        )
        return materialized(
            content_version(frame, CHUNKS_CONTENT),
            done.figures(strategy),
            files=[path],
            checks=[check],
        )

    return _chunks


def joined_chunks_asset(strategy: Strategy, shards: int) -> dg.AssetsDefinition:
    """The lane's chunks file from its shards' files, in the cleaned notes' order: the rows one step
    would write, merged a row group at a time (the step never holds the lane)."""
    parts = [lanes.shard_key("chunks", strategy, k) for k in range(shards)]

    @stage_asset(
        lanes.lane_key("chunks", strategy),
        group="chunks",
        deps=["cleaned_notes", *parts],
        config=lambda: config_digest(shards),
        strategy=strategy,
        description=f"Chunks of every note by the `{strategy.name}` strategy ({strategy.version}), "
        f"joined from its {shards} shards.",
    )
    def _chunks(context: dg.AssetExecutionContext, store: DataStore):
        notes = store.read(lanes.CLEANED_NOTES, columns=["note"])["note"].tolist()
        parts = [store.path(lanes.shard_path(strategy, k, shards)) for k in range(shards)]
        path = store.path(lanes.lane_path("chunks", strategy))
        joined_in_order(parts, "note", notes, path, lanes.CHUNKS_PER_GROUP)
        written = store.read(lanes.lane_path("chunks", strategy), columns=CHUNKS_CONTENT)
        return materialized(
            content_version(written, CHUNKS_CONTENT),
            {
                "strategy": strategy.name,
                "chunker_version": strategy.version,
                "chunks": len(written),
                "shards": shards,
            },
            files=[path],
        )

    return _chunks


@logic
def cleaned_notes(store: DataStore, names: list[str]) -> pd.DataFrame:
    """The cleaned notes `names`, whole."""
    return store.read(lanes.CLEANED_NOTES, filters=[("note", "in", names)])


@logic
def previous_passed(context: dg.AssetExecutionContext, previous: pd.DataFrame | None) -> bool:
    """Whether the chunks file read as `previous` is the one the last materialization wrote and
    its check passed: then its rows of unchanged notes need no checking again."""
    last = last_materialization(context.instance, context.asset_key)
    if previous is None or last is None:
        return False
    passed = check_passed(context.instance, dg.AssetCheckKey(context.asset_key, REPRODUCE))
    return passed is True and last.data_version == content_version(previous, CHUNKS_CONTENT)
