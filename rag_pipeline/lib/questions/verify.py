"""Every generated question is checked before it is written; a rejection is counted by its reason.

- the evidence (and a second one) is found exactly once in its note's cleaned text at the commit;
- a paraphrase shares no wording with its evidence: no run of `n_chars` characters (whitespace
  and case ignored) when the evidence is Japanese, no run of `n_words` words when it is English;
- an unanswerable question has an answer pattern, a valid regex found in no note (a leak test
  names no note and needs none);
- no question quotes a note its asker may not read (`rag_pipeline.lib.questions.quoting`);
- a question nearly the same as one kept before, or as one of `existing` (the hand-written set),
  is dropped: Dice over character 2- and 3-gram sets of at least `DUPLICATE`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag_pipeline.lib.core import UNAUTHORIZED
from rag_pipeline.lib.questions.generate import CJK, Candidate
from rag_pipeline.lib.questions.quoting import QuoteCheck

N_CHARS, N_WORDS = 4, 3
DUPLICATE = 0.8
QUOTES = "quotes a note its asker may not read"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Verified:
    kept: list[Candidate]
    rejected: Counter[str]  # reason -> count


def shared_run(question: str, evidence: str, n_chars: int = N_CHARS, n_words: int = N_WORDS) -> str | None:
    """The first run of wording the question shares with the evidence (None: none)."""
    if CJK.search(evidence):
        q, e = (re.sub(r"\s+", "", s.lower()) for s in (question, evidence))
        runs = {e[i : i + n_chars] for i in range(len(e) - n_chars + 1)}
        return next(
            (q[i : i + n_chars] for i in range(len(q) - n_chars + 1) if q[i : i + n_chars] in runs), None
        )
    qw, ew = _WORD.findall(question.lower()), _WORD.findall(evidence.lower())
    runs = {tuple(ew[i : i + n_words]) for i in range(len(ew) - n_words + 1)}
    found = (qw[i : i + n_words] for i in range(len(qw) - n_words + 1))
    return next((" ".join(r) for r in found if tuple(r) in runs), None)


def grams(text: str) -> frozenset[str]:
    text = re.sub(r"\s+", " ", text.lower())
    return frozenset(text[i : i + n] for n in (2, 3) for i in range(len(text) - n + 1))


def _dice(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 1.0


def problem(
    c: Candidate, texts: Mapping[str, str], n_chars: int = N_CHARS, n_words: int = N_WORDS
) -> str | None:
    """Why `c` may not be written (a reason to count), None when it may."""
    for slug, evidence in ((c.slug, c.evidence), (c.slug2 or c.slug, c.evidence2)):
        if c.slug is None or evidence is None:
            continue
        if slug not in texts:
            return "note not at the commit"
        found = texts[slug].count(evidence)
        if found != 1:
            return "evidence absent from its note" if not found else "evidence found more than once"
        if c.paraphrase and shared_run(c.q, evidence, n_chars, n_words):
            return "paraphrase shares wording with its evidence"
    if c.slug is None and c.category != UNAUTHORIZED:
        if not c.answer_pattern:
            return "unanswerable without an answer pattern"
        try:
            pattern = re.compile(c.answer_pattern)
        except re.error:
            return "answer pattern is not a valid regex"
        if any(pattern.search(text) for text in texts.values()):
            return "unanswerable but its answer pattern is found in a note"
    return None


def verify(
    candidates: Sequence[Candidate],
    texts: Mapping[str, str],
    existing: Sequence[str] = (),
    *,
    n_chars: int = N_CHARS,
    n_words: int = N_WORDS,
    duplicate: float = DUPLICATE,
    quoting: QuoteCheck | None = None,
) -> Verified:
    """The candidates that pass every check, in their order, and the rejections by reason;
    `quoting` holds the notes a question may not quote (None: the check is not made)."""
    rejected: Counter[str] = Counter()
    seen = [grams(q) for q in existing]
    quotes = quoting.quotes([(c.q, c.groups) for c in candidates]) if quoting else [None] * len(candidates)
    kept = []
    for c, quote in zip(candidates, quotes):
        why = problem(c, texts, n_chars, n_words) or (QUOTES if quote else None)
        if why is None:
            g = grams(c.q)
            if any(_dice(g, other) >= duplicate for other in seen):
                why = "near-duplicate question"
            else:
                seen.append(g)
        if why:
            rejected[why] += 1
        else:
            kept.append(c)
    return Verified(kept, rejected)
