"""Does a question quote a note its asker may not read?

A question quotes a note when it shares a run of `MIN_RUN` characters with the note's text, its
headings included, or with its title or slug, or holds its slug whole (a slug of `MIN_SLUG`
characters or more): what names a restricted note tells of it as much as its body does. Both texts
are compared after NFKC (full and half width alike), case folding and dropping everything but
letters and digits, so spaces, punctuation and line breaks cannot hide a copied sentence;
characters are counted, never words, so Japanese and English are held to the same length. A run
found in a note the asker may read as well (its text, title or slug) quotes nothing the asker could
not read.

Every generated question is checked before it is written (`verify`), and every question of the
questions file when it is loaded, as a warning naming it (`quoting_warnings`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from rag_pipeline.lib.core import fold, may_read
from rag_pipeline.lib.questions.gold_file import Question

MIN_RUN = 8  # characters
MIN_SLUG = 4  # characters: a shorter slug (`db`, `sre`) is a common word or a group's name


@dataclass(frozen=True)
class Quote:
    """What a question shares with a note its asker may not read."""

    note: str
    chars: int  # the longest stretch of the question found in that note, in compared characters

    def message(self, groups: Sequence[str]) -> str:
        return (
            f"shares {self.chars} characters with note {self.note!r}, which its asker "
            f"(groups {', '.join(groups)}) may not read"
        )


def compared(text: str) -> str:
    """`text` as it is compared: width and case folded, only letters and digits kept."""
    return "".join(c for c in fold(text) if c.isalnum())


def _parts(slug: str, text: str, title: str) -> list[str]:
    """What is compared of a note, each part apart (a line break is never compared: no run spans
    two parts): its text with its headings, its title, its slug."""
    return [compared(part) for part in (text, title, slug)]


class QuoteCheck:
    """The texts of the notes at one commit and their groups, ready to check questions against."""

    def __init__(self, notes: Iterable[tuple[str, Sequence[str], str, str]]):
        """`notes`: (slug, access groups, cleaned text, title) of each."""
        self.access: dict[str, tuple[str, ...]] = {}
        self.restricted: dict[str, list[str]] = {}
        self.slugs: dict[str, str] = {}  # restricted note -> its compared slug, when held whole
        public = []
        for slug, access, text, title in notes:
            self.access[slug] = tuple(access)
            parts = _parts(slug, text, title)
            if not self.access[slug]:
                public += parts
                continue
            self.restricted[slug] = parts
            if len(parts[-1]) >= MIN_SLUG:
                self.slugs[slug] = parts[-1]
        self.public = "\n".join(public)

    def quotes(self, asked: Sequence[tuple[str, Sequence[str] | None]]) -> list[Quote | None]:
        """Per (question, asker groups), the note it quotes most that its asker may not read, or None.
        An asker without groups may read every note; one pass over the restricted notes serves every
        question."""
        texts = {i: compared(q) for i, (q, groups) in enumerate(asked) if groups is not None}
        runs = {i: _runs(text) for i, text in texts.items()}
        holders = self._holders(set().union(*runs.values())) if runs else {}
        out: list[Quote | None] = [None] * len(asked)
        for i, positions in runs.items():
            groups = asked[i][1]
            shared: dict[str, list[int]] = defaultdict(list)
            for start, run in enumerate(positions):
                notes = holders.get(run, ())
                if notes and not any(may_read(groups, self.access[n]) for n in notes):
                    for note in notes:
                        shared[note].append(start)
            found = [Quote(n, _longest(starts)) for n, starts in shared.items()]
            found += [Quote(n, len(s)) for n, s in self._named(texts[i], groups).items()]
            if found:
                out[i] = max(found, key=_rank)
        return out

    def _named(self, text: str, groups: Sequence[str]) -> dict[str, str]:
        """The slugs `text` holds whole of notes `groups` may not read, that no note they may read
        holds (the notes by slug)."""
        held = {n: s for n, s in self.slugs.items() if s in text and not may_read(groups, self.access[n])}
        if not held:
            return {}
        readable = [
            p for n, parts in self.restricted.items() if may_read(groups, self.access[n]) for p in parts
        ]
        return {n: s for n, s in held.items() if s not in self.public and not any(s in p for p in readable)}

    def _holders(self, wanted: set[str]) -> Mapping[str, tuple[str, ...]]:
        """Per run of `wanted` that some restricted note holds and no public note does, the
        restricted notes holding it."""
        found: dict[str, set[str]] = defaultdict(set)
        for slug, parts in self.restricted.items():
            for part in parts:
                for run in _runs(part):
                    if run in wanted:
                        found[run].add(slug)
        return {run: tuple(sorted(notes)) for run, notes in found.items() if run not in self.public}


def _runs(text: str) -> list[str]:
    return [text[i : i + MIN_RUN] for i in range(len(text) - MIN_RUN + 1)]


def _longest(starts: list[int]) -> int:
    """The longest stretch covered by runs starting at `starts` (sorted)."""
    best, first = 0, starts[0]
    for prev, start in pairwise(starts):
        if start != prev + 1:
            best, first = max(best, prev - first + MIN_RUN), start
    return max(best, starts[-1] - first + MIN_RUN)


def _rank(quote: Quote) -> tuple[int, str]:
    return quote.chars, quote.note


def quoting_warnings(questions: Sequence[Question], check: QuoteCheck, source: str) -> list[str]:
    """One line per question of the questions file `source` that quotes a note its asker may not
    read, naming the question and the note (never the text they share)."""
    found = check.quotes([(q.q, q.groups) for q in questions])
    return [
        f"{source}: question {q.id} {quote.message(q.groups or ())}; word it from what its asker may read"
        for q, quote in zip(questions, found)
        if quote is not None
    ]
