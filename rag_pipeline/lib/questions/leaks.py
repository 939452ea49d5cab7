"""Leak-test questions (`gold generate --unauthorized N`): a restricted note's topic, asked by a group
of the notes that may not read it (category `unauthorized`), worded only from what that asker may read.

Each restricted note gives a question worded from each of its headings and one from its title;
`verify` drops every one that quotes a note its asker may not read
(`rag_pipeline.lib.questions.quoting`), so a heading or title carrying the note's body is never used.
A note left with none is asked about a topic of public notes instead: its most frequent terms that
public notes use too. A question worded from a heading names that heading as its evidence (a heading
is no body text); one worded from the title or a topic names no note. Leak tests are made offline,
so no restricted text reaches a prompt.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence

from rag_pipeline.lib.core import UNAUTHORIZED
from rag_pipeline.lib.questions.generate import OFFLINE, STOP_TERMS, TERM, Candidate, Note
from rag_pipeline.lib.questions.verify import Verified

TOPIC_TERMS = 3
Check = Callable[[Sequence[Candidate]], Verified]  # `verify` with the draft's texts and settings


def wording(topic: str, japanese: bool) -> str:
    """A terse question on `topic`: the topic is most of its text, so two topics are never near-duplicates."""
    return f"{topic}は？" if japanese else f"{topic}?"


def public_terms(notes: Sequence[Note]) -> set[str]:
    """The terms public notes use, lowercased."""
    return {t.lower() for note in notes if not note.access for t in TERM.findall(note.text)} - STOP_TERMS


def public_topic(note: Note, used: set[str]) -> str | None:
    """The note's most frequent terms of `used` (`public_terms`); None: fewer than two."""
    counts = Counter(t for t in TERM.findall(note.text) if t.lower() in used)
    terms = [t for t, _ in sorted(counts.items(), key=lambda c: (-c[1], c[0]))][:TOPIC_TERMS]
    return ("、" if note.japanese else ", ").join(terms) if len(terms) >= 2 else None


def leak_candidates(
    notes: Sequence[Note], rng: random.Random, check: Check
) -> tuple[list[Candidate], Counter[str]]:
    """The verified leak tests of every restricted note whose groups are not every group (`about`
    names the note), and the candidates rejected by reason."""
    known = sorted({g for note in notes for g in note.access})
    outside = {note.slug: [g for g in known if g not in note.access] for note in notes}
    restricted = [note for note in notes if note.access and outside[note.slug]]

    def ask(note: Note, topic: str, heading: str | None = None) -> Candidate:
        return Candidate(
            UNAUTHORIZED,
            wording(topic, note.japanese),
            note.slug if heading else None,
            heading,
            heading,
            OFFLINE,
            groups=(rng.choice(outside[note.slug]),),
            about=note.slug,
        )

    named = check(
        [ask(n, s.heading, s.heading) for n in restricted for s in n.sections if s.level > 0]
        + [ask(n, n.title) for n in restricted]
    )
    worded = {c.about for c in named.kept}
    left = [n for n in restricted if n.slug not in worded]
    used = public_terms(notes) if left else set()
    topics = check([ask(n, topic) for n in left if (topic := public_topic(n, used)) is not None])
    return named.kept + topics.kept, named.rejected + topics.rejected
