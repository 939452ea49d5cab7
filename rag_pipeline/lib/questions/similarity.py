"""Where an edited evidence string went: the span of a note's new text most like the old evidence.

Similarity is the Dice coefficient over the multiset of character 2- and 3-grams (no tokenizer, so
Japanese and English alike). Candidate spans keep to one line and one sentence unless the old
evidence spans more, and are cut where the old evidence was cut: one that ended before `。` or
`. ` must end at a sentence end, one that started after a space must start at a word, one cut
mid-word may be cut anywhere. Pure Dice prefers to drop an edited head or tail (that lowers the
span's n-grams, not the overlap), so candidates are ranked by Dice minus half the relative length
difference to the old evidence; the score reported is the plain Dice of the chosen span.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

NGRAMS = (2, 3)
LENGTH_PENALTY = 0.5  # per unit of relative length difference, in ranking only
MIN_RATIO, MAX_RATIO = 0.5, 2.0  # candidate lengths, relative to the old evidence
_FULL_STOPS = frozenset("。．！？")
_LATIN_STOPS = frozenset(".!?")
_WORD_CUTS = frozenset("、，,;；:：()（）「」『』[]【】\"'“”")
_PUNCT = _FULL_STOPS | _LATIN_STOPS | _WORD_CUTS
NONE, WORD, SENTENCE = 0, 1, 2


@dataclass(frozen=True)
class Match:
    text: str
    start: int
    end: int
    score: float  # Dice over character 2- and 3-grams with the old evidence, 0..1


def grams(text: str) -> Counter[str]:
    return Counter(text[i : i + n] for n in NGRAMS for i in range(len(text) - n + 1))


def dice(a: str, b: str) -> float:
    """2|A∩B| / (|A|+|B|) over the character 2- and 3-gram multisets (1.0 for equal strings)."""
    ga, gb = grams(a), grams(b)
    total = sum(ga.values()) + sum(gb.values())
    if not total:
        return float(a == b)
    return 2 * sum((ga & gb).values()) / total


def cut_level(text: str, i: int) -> int:
    """How clean a cut between text[i-1] and text[i] is: SENTENCE, WORD or NONE."""
    if i <= 0 or i >= len(text):
        return SENTENCE
    before, after = text[i - 1], text[i]
    if "\n" in (before, after) or after in _FULL_STOPS or before in _FULL_STOPS:
        return SENTENCE
    if after in _LATIN_STOPS and (i + 1 == len(text) or text[i + 1].isspace()):
        return SENTENCE
    if before.isspace() and i >= 2 and text[i - 2] in _LATIN_STOPS:
        return SENTENCE
    if before.isspace() or after.isspace() or before in _WORD_CUTS or after in _WORD_CUTS:
        return WORD
    return NONE


def most_similar_span(old: str, old_text: str, new_text: str) -> Match | None:
    """The span of `new_text` most like the evidence `old`, which occurs in `old_text` (the note as
    labelled); only a span occurring exactly once in `new_text` is proposed. None when nothing in
    the new text shares an n-gram with the evidence."""
    at = old_text.find(old)
    need_start = cut_level(old_text, at) if at >= 0 else NONE
    need_end = cut_level(old_text, at + len(old)) if at >= 0 else NONE
    found = _search(old, new_text, need_start, need_end)
    if found is None and (need_start, need_end) != (NONE, NONE):
        found = _search(old, new_text, NONE, NONE)  # no span cut the same way: cut anywhere
    return found


def _search(old: str, text: str, need_start: int, need_end: int) -> Match | None:
    target = grams(old)
    n_target = sum(target.values())
    if not n_target or not text:
        return None
    length = len(old)
    low, high = max(1, int(length * MIN_RATIO)), max(2, int(length * MAX_RATIO + 0.999))
    one_line = "\n" not in old
    one_sentence = not any(cut_level(old, i) == SENTENCE for i in range(1, len(old)))
    # a span starts and ends on punctuation only where the old evidence did
    punct_start, punct_end = old[0] in _PUNCT, old[-1] in _PUNCT
    firsts = {g for g in target if len(g) == min(NGRAMS)}
    candidates: list[tuple[float, int, int, float]] = []
    for s in range(len(text)):
        if text[s : s + min(NGRAMS)] not in firsts and need_start == NONE:
            continue  # a best span starts on a shared n-gram unless the cut forbids it
        if text[s].isspace() or (text[s] in _PUNCT and not punct_start) or cut_level(text, s) < need_start:
            continue
        seen: Counter[str] = Counter()
        overlap = n_window = 0
        for e in range(s + 1, min(len(text), s + high) + 1):
            if (one_line and text[e - 1] == "\n") or (
                one_sentence and e - 1 > s and cut_level(text, e - 1) == SENTENCE
            ):
                break  # the span would hold a line or sentence break the old evidence has not
            for n in NGRAMS:
                if e - n >= s:
                    g = text[e - n : e]
                    seen[g] += 1
                    n_window += 1
                    if seen[g] <= target[g]:
                        overlap += 1
            if e - s < low or text[e - 1].isspace() or cut_level(text, e) < need_end or not overlap:
                continue
            if text[e - 1] in _PUNCT and not punct_end:
                continue
            score = 2 * overlap / (n_target + n_window)
            rank = score - LENGTH_PENALTY * abs(e - s - length) / length
            candidates.append((-rank, s, e, score))
    candidates.sort()
    for _, s, e, score in candidates:
        if text.count(text[s:e]) == 1:
            return Match(text[s:e], s, e, round(score, 4))
    return None
