"""Where a chunker cuts a note: each function turns one cleaned note's text and its sections into
character spans (fixed windows, heading sections, sections split by paragraphs and sentences,
recursive cuts at the best break)."""

from __future__ import annotations

import bisect
import itertools
import re

from rag_pipeline.lib.core import PARAGRAPH_END, SENTENCE_BREAK, SENTENCE_SPLIT
from rag_pipeline.lib.sources import Section

Span = tuple[int, int]


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
