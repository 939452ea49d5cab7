"""Chunking strategies: each turns one cleaned note into character spans of its text.

A strategy's `version` names its code and parameters; it is part of every chunk_id
and the Dagster code version of its lane, so changing one chunker touches one lane.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from rag_pipeline.lib.cleaning import Section

Span = tuple[int, int]

_PARAGRAPH_END = re.compile(r"\n")
_SENTENCE_END = re.compile(r"(?<=[。．！？!?])|(?<=[.] )")


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


def fixed_spans(text: str, sections: list[Section], size: int) -> list[Span]:
    return [(i, min(i + size, len(text))) for i in range(0, len(text), size)]


def top_sections(sections: list[Section], max_level: int = 3) -> list[Section]:
    """Sections cut only at headings of level <= max_level; deeper ones stay inside their parent."""
    tops = [s for s in sections if s.level <= max_level]
    ends = [t.start for t in tops[1:]] + [sections[-1].end if sections else 0]
    return [Section(t.heading, t.level, t.heading_path, t.start, end) for t, end in zip(tops, ends)]


def section_spans(text: str, sections: list[Section]) -> list[Span]:
    return [(s.start, s.end) for s in top_sections(sections)]


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
    for p in _split(text, start, end, _PARAGRAPH_END):
        if p[1] - p[0] <= limit:
            units.append(p)
            continue
        for s in _split(text, p[0], p[1], _SENTENCE_END):
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


def _fixed(size: int) -> Strategy:
    return Strategy(f"fixed-{size}", f"fixed-v1:size={size}", partial(fixed_spans, size=size))


STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in [
        _fixed(200),
        _fixed(500),
        _fixed(1000),
        _fixed(2000),
        Strategy("section", "section-v1:max_level=3", section_spans),
        Strategy(
            "section-split",
            "section-split-v1:limit=800,overlap=120",
            partial(section_split_spans, limit=800, overlap=120),
            overlapping=True,
        ),
    ]
}


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
    for start, end in strategy.spans(text, sections):
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
            }
        )
    return rows


def coverage_problems(chunks: list[dict], texts: dict[str, str], overlapping: bool) -> list[str]:
    """Why a lane's chunks do not reproduce their notes: text mismatches, and gaps holding
    text (or, for a non-overlapping strategy, overlaps) between consecutive spans."""
    problems = []
    by_note: dict[str, list[dict]] = {}
    for c in chunks:
        by_note.setdefault(c["note"], []).append(c)
        if texts.get(c["note"], "")[c["start"] : c["end"]] != c["text"]:
            problems.append(
                f"chunk {c['chunk_id']} of note {c['note']!r}: text differs from [{c['start']}, {c['end']})"
            )
    for note, text in texts.items():
        spans = sorted((c["start"], c["end"]) for c in by_note.get(note, []))
        reached = 0
        for start, end in spans:
            if start < reached and not overlapping:
                problems.append(f"note {note!r}: chunks overlap at offset {start}")
            elif text[reached:start].strip():
                problems.append(f"note {note!r}: text [{reached}, {start}) is in no chunk")
            reached = max(reached, end)
        if text[reached:].strip():
            problems.append(f"note {note!r}: text [{reached}, {len(text)}) is in no chunk")
    return problems


def chunk_cleaned_note(strategy: Strategy, note: dict) -> list[dict]:
    """`chunk_note` for a row of the cleaned notes (its sections stored as dicts)."""
    return chunk_note(
        strategy,
        note=note["note"],
        source_version=note["source_version"],
        commit=note["commit"],
        cleaner_version=note["cleaner_version"],
        text=note["text"],
        sections=[Section(**s) for s in note["sections"]],
    )
