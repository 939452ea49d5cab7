"""Chunking strategies and the chunk rows they make: a strategy cuts one cleaned note into spans of
its text (spans.py), and `chunk_note` makes its rows. A strategy's `version` names its parameters
and the code of both (its fingerprint); it is part of every chunk_id and the Dagster code version of
its lane, so changing one chunker touches one lane, and the code that makes rows touches every lane."""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from rag_pipeline.lib.chunking.spans import (
    Span,
    fixed_spans,
    recursive_spans,
    section_spans,
    section_split_spans,
    top_sections,
)
from rag_pipeline.lib.chunking.texts import contextual_text
from rag_pipeline.lib.core import text_hash
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.sources import Section


@dataclass(frozen=True)
class Strategy:
    name: str
    version: str
    spans: Callable[[str, list[Section]], list[Span]]
    overlapping: bool = False

    @property
    def key(self) -> str:
        """The strategy's name as a Dagster asset-key fragment (`fixed-200` -> `fixed_200`)."""
        return self.name.replace("-", "_")


class ChunkSpanError(ValueError):
    """A chunker returned a span that is not a non-empty piece of its note."""


def built_in(name: str, kind: str, spans: partial, overlapping: bool = False, **shown: int) -> Strategy:
    """A strategy of a `spans` function of the project: named by its kind, parameters and code (the
    function's and that of the rows made of its spans)."""
    parameters = ",".join(f"{k}={v}" for k, v in shown.items())
    code = fingerprint([spans.func, chunk_cleaned_note])
    return Strategy(name, f"{kind}:{parameters}@{code}", spans, overlapping)


def fixed_strategy(name: str, size: int, overlap: int = 0) -> Strategy:
    shown = {"size": size} | ({"overlap": overlap} if overlap else {})
    return built_in(name, "fixed", partial(fixed_spans, size=size, overlap=overlap), overlap > 0, **shown)


def section_strategy(name: str, max_level: int = 3) -> Strategy:
    return built_in(name, "section", partial(section_spans, max_level=max_level), max_level=max_level)


def section_split_strategy(name: str, limit: int, overlap: int = 0) -> Strategy:
    spans = partial(section_split_spans, limit=limit, overlap=overlap)
    return built_in(name, "section-split", spans, overlap > 0, limit=limit, overlap=overlap)


def recursive_strategy(name: str, size: int, overlap: int = 0) -> Strategy:
    spans = partial(recursive_spans, size=size, overlap=overlap)
    return built_in(name, "recursive", spans, overlap > 0, size=size, overlap=overlap)


def checked_spans(strategy: Strategy, note: str, text: str, sections: list[Section]) -> list[Span]:
    """The strategy's spans of the note as integer pairs. A chunker written elsewhere (`python`
    strategies) can do anything: one that raises, returns anything but a list, or a span that is not
    a non-empty piece of the text, is an error naming the strategy and the note."""
    where = f"strategy {strategy.name!r} ({strategy.version}), note {note!r}"
    try:
        spans = strategy.spans(text, sections)
    except Exception as exc:
        detail = " ".join(str(exc).split())[:200]  # one line, whatever the function's message
        raise ChunkSpanError(
            f"{where}: the chunker raised {type(exc).__name__}: {detail}; fix the function (or the note)"
        ) from exc
    if not isinstance(spans, list):
        raise ChunkSpanError(
            f"{where}: the chunker returned a {type(spans).__name__}, not a list of (start, end) pairs"
        )
    checked = []
    for span in spans:
        try:
            start, end = map(operator.index, span)
        except (TypeError, ValueError):
            raise ChunkSpanError(f"{where}: span {span!r} is not a (start, end) pair of integers") from None
        if not 0 <= start < end <= len(text):
            why = "is empty" if start == end else "is inverted" if start > end else "lies outside"
            raise ChunkSpanError(f"{where}: span {span!r} {why}; the note's cleaned text is [0, {len(text)})")
        checked.append((start, end))
    return checked


def stable_id(*parts: object) -> str:
    """A deterministic 16-hex id from the parts that define a thing."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:16]


def chunk_note(
    strategy: Strategy,
    *,
    note: str,
    source_version: str,
    commit: str,
    cleaner_version: str,
    text: str,
    sections: list[Section],
) -> list[dict]:
    """Chunk rows for one note; whitespace-only spans are dropped, so no chunk is empty."""
    parents = top_sections(sections) or sections
    rows = []
    for start, end in checked_spans(strategy, note, text, sections):
        piece = text[start:end]
        if not piece.strip():
            continue
        # the parent: the ### sections the chunk overlaps (one, unless a fixed-size chunk crosses a heading)
        covering = [s for s in parents if s.start < end and s.end > start] or parents[:1]
        parent_start, parent_end = covering[0].start, covering[-1].end
        inner = next((s for s in reversed(sections) if s.start <= start), sections[0])
        rows.append(
            {
                "chunk_id": stable_id(
                    note, source_version, cleaner_version, strategy.name, strategy.version, start, end
                ),
                "note": note,
                "source_version": source_version,
                "commit": commit,
                "strategy": strategy.name,
                "chunker_version": strategy.version,
                "cleaner_version": cleaner_version,
                "start": start,
                "end": end,
                "heading_path": inner.heading_path,
                "parent_id": stable_id(note, source_version, cleaner_version, parent_start, parent_end),
                "parent_start": parent_start,
                "parent_end": parent_end,
                "text": piece,
                "n_chars": len(piece),
                "text_hash": text_hash(piece),
                "ctx_text_hash": text_hash(contextual_text(inner.heading_path, piece)),
            }
        )
    return rows


def chunk_cleaned_note(strategy: Strategy, note: dict) -> list[dict]:
    """`chunk_note` for a row of the cleaned notes (its sections stored as dicts); every chunk carries
    the groups that may read its note (`access`, empty for a public note) and, as its `commit`, the
    last commit that changed its note (`note_commit`): a chunk's rows do not change with unrelated commits."""
    rows = chunk_note(
        strategy,
        note=note["note"],
        source_version=note["source_version"],
        commit=note["note_commit"],
        cleaner_version=note["cleaner_version"],
        text=note["text"],
        sections=[Section(**s) for s in note["sections"]],
    )
    access = sorted(note.get("access") if note.get("access") is not None else [])
    return [row | {"access": access} for row in rows]


# the built-in strategies; a version is part of every chunk id of its lane
STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in [
        *(fixed_strategy(f"fixed-{size}", size) for size in (200, 500, 1000, 2000)),
        section_strategy("section"),
        section_split_strategy("section-split", limit=800, overlap=120),
    ]
}
