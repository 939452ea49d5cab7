"""Leak-test questions (`gold generate --unauthorized N`): a restricted note's topic, asked by a group
of the notes that may not read it (category `unauthorized`), worded without anything of the note.

A leak test is a terse question of terms public notes use (`memory, cluster, workers?`): the most
distinctive (TF-IDF) of those the restricted note uses, leaving out every term its headings, title
or slug hold, so that the question says nothing the asker could not read and still lies near the
note, where a retriever that ignores access would find it. A note gives one question per
`TOPIC_TERMS` of its terms, the most distinctive first. A leak test names no note (no slug, section
or evidence: the file's reader may not read it either), and `verify` drops any that still quotes a
note its asker may not read (`rag_pipeline.lib.questions.quoting`). Leak tests are made offline, so
no restricted text reaches a prompt.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence

from rag_pipeline.lib.core import UNAUTHORIZED
from rag_pipeline.lib.questions.generate import OFFLINE, STOP_TERMS, TERM, Candidate, Note
from rag_pipeline.lib.questions.quoting import compared
from rag_pipeline.lib.questions.verify import Verified

TOPIC_TERMS = 3  # terms per question
TOPICS = 4  # questions per note, at most
MIN_TERM = 3  # characters of an ASCII term: `to` or `ms` is no topic (二人 is one)
Check = Callable[[Sequence[Candidate]], Verified]  # `verify` with the draft's texts and settings


def wording(terms: Sequence[str], japanese: bool) -> str:
    """A terse question of `terms`: they are most of its text, so two topics are never near-duplicates."""
    return f"{'、'.join(terms)}は？" if japanese else f"{', '.join(terms)}?"


def public_terms(notes: Sequence[Note]) -> dict[str, float]:
    """The terms public notes use, lowercased, each with its inverse document frequency over every
    note (a term every note uses says nothing of a topic, and is left out)."""
    held = [{t.lower() for t in TERM.findall(note.text)} for note in notes]
    df = Counter(t for terms in held for t in terms)
    public = set().union(*(terms for note, terms in zip(notes, held) if not note.access)) - STOP_TERMS
    return {
        t: math.log(len(notes) / df[t])
        for t in public
        if df[t] < len(notes) and (len(t) >= MIN_TERM or not t.isascii())
    }


def names(note: Note) -> list[str]:
    """What names the note, as compared (`quoting.compared`): its headings, its title and its slug."""
    return [compared(text) for text in (note.slug, note.title, *(s.heading for s in note.sections))]


def topics(note: Note, used: dict[str, float]) -> list[list[str]]:
    """The note's terms of `used` (`public_terms`) that nothing naming it holds, the most distinctive
    (TF-IDF) first, `TOPIC_TERMS` to a topic, at most `TOPICS` topics of two terms or more."""
    named = names(note)

    def naming(term: str) -> bool:
        folded = compared(term)
        return not folded or any(folded in name or (name and name in folded) for name in named)

    found = [t for t in TERM.findall(note.text) if t.lower() in used and not naming(t)]
    shown = {t.lower(): t for t in reversed(found)}  # each term as the note first writes it
    counts = Counter(t.lower() for t in found)
    terms = [shown[t] for t, _ in sorted(counts.items(), key=lambda c: (-c[1] * used[c[0]], c[0]))]
    groups = [terms[i : i + TOPIC_TERMS] for i in range(0, TOPIC_TERMS * TOPICS, TOPIC_TERMS)]
    return [g for g in groups if len(g) >= 2]


def leak_candidates(
    notes: Sequence[Note], rng: random.Random, check: Check
) -> tuple[list[Candidate], Counter[str]]:
    """The verified leak tests of every restricted note whose groups are not every group (`about`
    names the note), and the candidates rejected by reason."""
    known = sorted({g for note in notes for g in note.access})
    outside = {note.slug: [g for g in known if g not in note.access] for note in notes}
    restricted = [note for note in notes if note.access and outside[note.slug]]
    used = public_terms(notes) if restricted else {}
    asked = [
        Candidate(
            UNAUTHORIZED,
            wording(terms, note.japanese),
            None,
            None,
            None,
            OFFLINE,
            groups=(rng.choice(outside[note.slug]),),
            about=note.slug,
        )
        for note in restricted
        for terms in topics(note, used)
    ]
    checked = check(asked)
    return checked.kept, checked.rejected
