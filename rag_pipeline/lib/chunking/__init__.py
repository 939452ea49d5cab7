"""Chunking strategies (fixed, section, section-split, recursive, your own), chunk rows, and the
check that chunks reproduce their notes."""

from rag_pipeline.lib.chunking.chunkers import (
    STRATEGIES,
    ChunkSpanError,
    Strategy,
    chunk_cleaned_note,
    chunk_note,
    fixed_strategy,
    stable_id,
)
from rag_pipeline.lib.chunking.coverage import coverage_problems
from rag_pipeline.lib.chunking.lane import NOTE_VERSIONS, Chunked, chunk_lane, unchecked_coverage
from rag_pipeline.lib.chunking.spans import fixed_spans, recursive_spans, section_split_spans, top_sections
from rag_pipeline.lib.chunking.strategy_file import (
    StrategyError,
    load_strategies,
    read_strategy_file,
    read_toml,
    strategy_from_table,
)
from rag_pipeline.lib.chunking.texts import contextual_text, with_text_hashes

__all__ = [
    "NOTE_VERSIONS",
    "STRATEGIES",
    "ChunkSpanError",
    "Chunked",
    "Strategy",
    "StrategyError",
    "chunk_cleaned_note",
    "chunk_lane",
    "chunk_note",
    "contextual_text",
    "coverage_problems",
    "fixed_spans",
    "fixed_strategy",
    "load_strategies",
    "read_strategy_file",
    "read_toml",
    "recursive_spans",
    "section_split_spans",
    "stable_id",
    "strategy_from_table",
    "top_sections",
    "unchecked_coverage",
    "with_text_hashes",
]
