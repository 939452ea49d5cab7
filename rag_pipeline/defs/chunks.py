"""Chunk stage: one asset per strategy, so each chunker has its own code version."""

import dagster as dg
import pandas as pd

from rag_pipeline.defs.resources import DataStore
from rag_pipeline.lib.chunking import Strategy, chunk_note, coverage_problems
from rag_pipeline.lib.cleaning import Section
from rag_pipeline.lib.incremental import content_version, note_changes


def chunk_key(row: dict) -> str:
    """What a note's chunks depend on: equal keys mean the previous chunks can be reused.
    A file written before a column existed gives None there, so nothing of it is reused."""
    return f"{row.get('source_version')}|{row.get('cleaner_version')}|{row.get('chunker_version')}"


def chunks_asset(strategy: Strategy) -> dg.AssetsDefinition:
    name = f"chunks_{strategy.key}"
    storage_path = f"chunks/{strategy.name}.parquet"

    @dg.asset(
        name=name,
        group_name="chunks",
        code_version=strategy.version,
        kinds={"parquet"},
        metadata={"storage_path": storage_path, "strategy": strategy.name},
        check_specs=[
            dg.AssetCheckSpec(
                "chunks_reproduce_notes",
                asset=name,
                blocking=True,
                description="Each chunk's text is its span of the cleaned note; the spans leave no text out"
                + ("." if strategy.overlapping else " and do not overlap."),
            )
        ],
        description=f"Chunks of every note by the `{strategy.name}` strategy ({strategy.version}).",
    )
    def _chunks(context: dg.AssetExecutionContext, cleaned_notes: pd.DataFrame, store: DataStore):
        previous = store.previous(storage_path)
        kept: dict[str, list[dict]] = {}
        if previous is not None:
            for row in previous.to_dict("records"):
                kept.setdefault(row["note"], []).append(row)
        changes = note_changes(
            {n: chunk_key(rows[0]) for n, rows in kept.items()},
            {
                n.note: chunk_key(n._asdict() | {"chunker_version": strategy.version})
                for n in cleaned_notes.itertuples(index=False)
            },
        )
        reuse = set(changes.unchanged)
        rows: list[dict] = []
        for n in cleaned_notes.itertuples(index=False):
            if n.note in reuse:
                rows += [r | {"commit": n.commit} for r in kept[n.note]]
                continue
            rows += chunk_note(
                strategy,
                note=n.note,
                source_version=n.source_version,
                commit=n.commit,
                cleaner_version=n.cleaner_version,
                text=n.text,
                sections=[Section(**s) for s in n.sections],
            )
        frame = pd.DataFrame(rows)
        before = set() if previous is None else set(previous["chunk_id"])
        after = set(frame["chunk_id"])
        counts = changes.counts() | {
            "chunks": len(frame),
            "chunks_reused": sum(len(kept[n]) for n in reuse),
            "chunks_new": len(after - before),
            "chunks_removed": len(before - after),
        }
        context.log.info(f"{name}: {counts}")
        problems = coverage_problems(
            rows, dict(zip(cleaned_notes["note"], cleaned_notes["text"])), strategy.overlapping
        )
        yield dg.Output(
            frame,
            data_version=dg.DataVersion(content_version(frame, ["chunk_id"])),
            metadata={
                "strategy": strategy.name,
                "chunker_version": strategy.version,
                "chars_median": int(frame["n_chars"].median()),
                "chars_max": int(frame["n_chars"].max()),
            }
            | counts,
        )
        yield dg.AssetCheckResult(
            passed=not problems,
            metadata={"problems": dg.MetadataValue.md("\n".join(problems[:50]) or "none")},
        )

    return _chunks
