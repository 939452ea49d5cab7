"""Chunking strategies: each turns one cleaned note into character spans of its text. A strategy's
`version` names its code and parameters; it is part of every chunk_id and the Dagster code version
of its lane, so changing one chunker touches one lane."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from rag_pipeline.lib.chunking.texts import contextual_text
from rag_pipeline.lib.core import PARAGRAPH_END, SENTENCE_BREAK, SENTENCE_SPLIT, text_hash
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.sources import Section

Span = tuple[int, int]


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


def fixed_spans(text: str, sections: list[Section], size: int, overlap: int = 0) -> list[Span]:
    """`size` characters each, the next starting `overlap` characters before the previous ends;
    the last one ends at the end of the text."""
    if not 0 <= overlap < size:
        raise ValueError(f"overlap {overlap} must be >= 0 and smaller than size {size}")
    spans: list[Span] = []
    for start in range(0, len(text), size - overlap):
        spans.append((start, min(start + size, len(text))))
        if start + size >= len(text):
            break
    return spans


def top_sections(sections: list[Section], max_level: int = 3) -> list[Section]:
    """Sections cut only at headings of level <= max_level; deeper ones stay inside their parent."""
    tops = [s for s in sections if s.level <= max_level]
    ends = [t.start for t in tops[1:]] + [sections[-1].end if sections else 0]
    return [Section(t.heading, t.level, t.heading_path, t.start, end) for t, end in zip(tops, ends)]


def section_spans(text: str, sections: list[Section], max_level: int = 3) -> list[Span]:
    return [(s.start, s.end) for s in top_sections(sections, max_level) if s.end > s.start]


def _split(text: str, start: int, end: int, boundary: re.Pattern[str]) -> list[Span]:
    """Cut [start, end) just after every boundary match."""
    cuts = [start] + [
        start + m.end() for m in boundary.finditer(text[start:end]) if 0 < m.end() < end - start
    ]
    cuts = [*sorted(set(cuts)), end]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def _units(text: str, start: int, end: int, limit: int) -> list[Span]:
    """Paragraphs; a paragraph over `limit` becomes sentences; a sentence over it, hard cuts."""
    units: list[Span] = []
    for p in _split(text, start, end, PARAGRAPH_END):
        if p[1] - p[0] <= limit:
            units.append(p)
            continue
        for s in _split(text, p[0], p[1], SENTENCE_SPLIT):
            units.extend((i, min(i + limit, s[1])) for i in range(s[0], s[1], limit))
    return units


def section_split_spans(text: str, sections: list[Section], limit: int, overlap: int) -> list[Span]:
    """Heading sections; one longer than `limit` is packed from whole units, each piece
    starting with the previous piece's last units when they fit in `overlap` characters."""
    spans: list[Span] = []
    for start, end in section_spans(text, sections):
        if end - start <= limit:
            spans.append((start, end))
            continue
        units = _units(text, start, end, limit)
        i = 0
        while True:
            j = i
            while j + 1 < len(units) and units[j + 1][1] - units[i][0] <= limit:
                j += 1
            spans.append((units[i][0], units[j][1]))
            if j + 1 == len(units):
                break
            k = j + 1
            while (
                k - 1 > i
                and units[j][1] - units[k - 1][0] <= overlap
                and units[j + 1][1] - units[k - 1][0] <= limit
            ):
                k -= 1
            i = k
    return spans


def _breaks(text: str, sections: list[Section]) -> tuple[list[int], list[int], set[int]]:
    """Where a piece may end (sorted offsets), how good each break is (0 a heading or the end of the
    text, 1 a line end, 2 a sentence end), and the offsets of heading lines, never cut from their text."""
    level = {len(text): 0} | {s.start: 0 for s in sections if 0 < s.start < len(text)}
    heading_lines = {
        o for s in sections if s.level > 0 for o in range(s.start, text.find("\n", s.start) + 1 or len(text))
    }
    for lv, pattern in ((1, PARAGRAPH_END), (2, SENTENCE_BREAK)):
        for m in pattern.finditer(text):
            if 0 < m.end() < len(text) and m.end() - 1 not in heading_lines:
                level.setdefault(m.end(), lv)
    offsets = sorted(level)
    return offsets, [level[o] for o in offsets], heading_lines


def recursive_spans(text: str, sections: list[Section], size: int, overlap: int = 0) -> list[Span]:
    """Chunks of at most `size` characters cut at the best break within reach: a heading, else a line
    end (a paragraph is a line once cleaned), else a sentence end, else after `size` characters.
    A chunk starting at a heading takes as many whole sections as fit, else the latest break of its
    best kind; a chunk starting inside a section ends at the section's end at the latest. A chunk not
    starting at a heading begins with the previous chunk's last pieces that fit in `overlap` characters
    (its last `overlap` characters when no whole piece fits), unless that would keep it from reaching
    the next break."""
    if not 0 <= overlap < size:
        raise ValueError(f"overlap {overlap} must be >= 0 and smaller than size {size}")
    offsets, levels, heading_lines = _breaks(text, sections)
    spans: list[Span] = []
    start = end = 0
    at_heading = True
    while end < len(text):
        window = range(bisect.bisect_right(offsets, end), bisect.bisect_right(offsets, start + size))
        headings = [i for i in window if levels[i] == 0]
        if headings:
            best: int | None = headings[-1] if at_heading else headings[0]
        else:
            best = min(window, key=lambda i: (levels[i], -i), default=None)
        end = start + size if best is None else offsets[best]
        spans.append((start, end))
        at_heading = best is not None and levels[best] == 0
        if not overlap or at_heading:
            start = end
            continue
        following = offsets[bisect.bisect_right(offsets, end)]  # the text's end at the latest
        reachable = following - size <= end
        lowest = max(end - overlap, following - size) if reachable else end - overlap
        first = offsets[bisect.bisect_right(offsets, max(lowest - 1, start))]  # >= lowest, > start
        if first < end:
            start = first
        elif start < lowest and lowest not in heading_lines:  # the last piece alone is over `overlap`
            start = lowest
        else:  # the previous chunk is one piece no longer than `overlap`: repeating it adds nothing
            start = end
    return spans


def built_in(name: str, kind: str, spans: partial, overlapping: bool = False, **shown: int) -> Strategy:
    """A strategy of a `spans` function of the project: named by its kind, parameters and code."""
    parameters = ",".join(f"{k}={v}" for k, v in shown.items())
    return Strategy(name, f"{kind}:{parameters}@{fingerprint([spans.func])}", spans, overlapping)


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


# the built-in strategies; a version is part of every chunk id of its lane
STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in [
        *(fixed_strategy(f"fixed-{size}", size) for size in (200, 500, 1000, 2000)),
        section_strategy("section"),
        section_split_strategy("section-split", limit=800, overlap=120),
    ]
}


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
