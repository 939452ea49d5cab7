"""Chunk stage: one asset per strategy, so each chunker has its own code version."""

import dagster as dg
import pandas as pd

from rag_pipeline.defs import lanes
from rag_pipeline.defs.assets import stage_asset
from rag_pipeline.defs.lineage import CHECKS, last_materialization, materialized
from rag_pipeline.defs.resources import DataStore
from rag_pipeline.lib.chunking import Strategy, chunk_cleaned_note, coverage_problems, with_text_hashes
from rag_pipeline.lib.core import content_version, rebuild_by_note

NOTE_VERSIONS = ["note", "source_version", "cleaner_version", "note_commit"]
CHUNKS_CONTENT = ["chunk_id", "commit"]  # the commit too: it is what the served rows say their text is from


def chunks_asset(strategy: Strategy) -> dg.AssetsDefinition:
    name = lanes.lane_key("chunks", strategy)
    relative = lanes.lane_path("chunks", strategy)
    covers = "." if strategy.overlapping else " and do not overlap."

    @stage_asset(
        name,
        group="chunks",
        deps=["cleaned_notes"],
        strategy=strategy,
        checks=[
            (
                "chunks_reproduce_notes",
                f"Each chunk's text is its span of the cleaned note; the spans leave no text out{covers}",
                True,
            )
        ],
        description=f"Chunks of every note by the `{strategy.name}` strategy ({strategy.version}).",
    )
    def _chunks(context: dg.AssetExecutionContext, store: DataStore):
        # the notes' versions; the texts and sections of only the notes rebuilt are read
        versions = store.read(lanes.CLEANED_NOTES, columns=NOTE_VERSIONS)
        previous = store.previous(relative)
        if previous is not None and "ctx_text_hash" not in previous:  # written before chunks kept them
            previous = with_text_hashes(previous)
        rebuilt: list[pd.DataFrame] = []

        def whole(names: list[str]) -> pd.DataFrame:
            rebuilt.append(store.read(lanes.CLEANED_NOTES, filters=[("note", "in", names)]))
            return rebuilt[0]

        frame, changes = rebuild_by_note(
            previous,
            versions.assign(chunker_version=strategy.version),
            key=["source_version", "cleaner_version", "chunker_version"],
            build=lambda n: chunk_cleaned_note(strategy, n),
            refresh={"commit": "note_commit"},
            rows=whole,
        )
        # through lists: iterating a column of Arrow strings costs ~6 times more
        before = set() if previous is None else set(previous["chunk_id"].tolist())
        after = set(frame["chunk_id"].tolist())
        counts = changes.counts() | {
            "chunks": len(frame),
            "chunks_reused": len(after & before),
            "chunks_new": len(after - before),
            "chunks_removed": len(before - after),
        }
        context.log.info(f"{name}: {counts}")
        # rows kept from a file whose check passed were checked against the same note texts
        if previous_passed(context, previous):
            unchanged = set(changes.unchanged)
            checked, notes = frame[[n not in unchanged for n in frame["note"].tolist()]], rebuilt
        else:
            checked, notes = frame, [store.read(lanes.CLEANED_NOTES, columns=["note", "text"])]
        names = ["chunk_id", "note", "start", "end", "text"]
        # from plain lists: a frame of Arrow strings is slow to turn into records row by row
        spans = [dict(zip(names, row)) for row in zip(*(checked[c].tolist() for c in names))]
        texts = {note: text for n in notes for note, text in zip(n["note"], n["text"])}
        problems = coverage_problems(spans, texts, strategy.overlapping)
        path = store.write(frame, relative)
        check = dg.AssetCheckResult(
            check_name="chunks_reproduce_notes",
            passed=not problems,
            metadata={"problems": dg.MetadataValue.md("\n".join(problems[:50]) or "none")},
        )
        return materialized(
            content_version(frame, CHUNKS_CONTENT),
            {
                "strategy": strategy.name,
                "chunker_version": strategy.version,
                "chars_median": int(frame["n_chars"].median()),
                "chars_max": int(frame["n_chars"].max()),
                **counts,
            },
            files=[path],
            checks=[check],
        )

    return _chunks


def previous_passed(context: dg.AssetExecutionContext, previous: pd.DataFrame | None) -> bool:
    """Whether the chunks file read as `previous` is the one the last materialization wrote and
    its check passed: then its rows of unchanged notes need no checking again."""
    last = last_materialization(context.instance, context.asset_key)
    if previous is None or last is None:
        return False
    passed = ((last.value(CHECKS) or {}).get("chunks_reproduce_notes") or {}).get("passed") is True
    return passed and last.data_version == content_version(previous, CHUNKS_CONTENT)
