"""Chunk stage: one asset per strategy, so each chunker has its own code version."""

import dagster as dg
import pandas as pd

from rag_pipeline.lib.chunking import Strategy, chunk_note, coverage_problems
from rag_pipeline.lib.cleaning import Section


def chunks_asset(strategy: Strategy) -> dg.AssetsDefinition:
    name = f"chunks_{strategy.key}"

    @dg.asset(
        name=name,
        group_name="chunks",
        code_version=strategy.version,
        kinds={"parquet"},
        metadata={"storage_path": f"chunks/{strategy.name}.parquet", "strategy": strategy.name},
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
    def _chunks(context: dg.AssetExecutionContext, cleaned_notes: pd.DataFrame):
        rows: list[dict] = []
        for n in cleaned_notes.itertuples(index=False):
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
        problems = coverage_problems(
            rows, dict(zip(cleaned_notes["note"], cleaned_notes["text"])), strategy.overlapping
        )
        yield dg.Output(
            frame,
            metadata={
                "strategy": strategy.name,
                "chunker_version": strategy.version,
                "chunks": len(frame),
                "chars_median": int(frame["n_chars"].median()),
                "chars_max": int(frame["n_chars"].max()),
            },
        )
        yield dg.AssetCheckResult(
            passed=not problems,
            metadata={"problems": dg.MetadataValue.md("\n".join(problems[:50]) or "none")},
        )

    return _chunks
