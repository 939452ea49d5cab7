"""The offline judge (`RAG_JUDGE=rules`): what can be checked without a model.

- faithful: every number, identifier and quoted phrase of each answer sentence is in a passage given;
- cites_support: ... of each sentence that cites, in the passages it cites; the citations valid;
- correct: every key term of the gold evidence its asker may read is in the answer (numbers,
  identifiers, quoted phrases, katakana and kanji runs of two or more, ASCII words of four letters or
  more; an evidence without one: its whole text); unanswerable and unauthorized: it declines.

Text is compared after NFKC, case folding and with whitespace removed; a number only as a whole
number (15 is not found in 15.6 or 150). Plain words are not checked: a paraphrase passes faithful, a claim
with none of these tokens cannot fail it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from rag_pipeline.lib.answers import without_citations
from rag_pipeline.lib.core import SENTENCE_END
from rag_pipeline.lib.judging.items import ANSWERABLE, Item
from rag_pipeline.lib.judging.rubric import NO, YES

# ASCII tokens: a number stands alone (the 40 of 40P01 is part of an identifier)
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:[.,]\d+)*(?![A-Za-z0-9_])")
WORD = re.compile(r"(?<![A-Za-z0-9_])(?=[0-9_]*[A-Za-z])[A-Za-z0-9_]+(?:[.\-/:][A-Za-z0-9_]+)*")
QUOTED = re.compile(r"「([^」]+)」|『([^』]+)』|“([^”]+)”|\"([^\"]+)\"|`([^`]+)`")
KATAKANA = re.compile(r"[ァ-ヺー]{2,}")
KANJI = re.compile(r"[\u4e00-\u9fff々]{2,}")
CITED = re.compile(r"\[(\d+)\]")

Verdict = tuple[str, str]


def squash(text: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text).casefold())


def is_identifier(word: str) -> bool:
    """Code-like: with `_`, a digit or an inner `.-/:`, or two capitals (WAL, PostgreSQL); a plain
    word (`the`, `Parquet`) is not."""
    return bool(re.search(r"[_\d.\-/:]", word)) or sum(c.isupper() for c in word) >= 2


def checkable(sentence: str) -> list[str]:
    """A sentence's numbers, identifiers and quoted phrases."""
    text = unicodedata.normalize("NFKC", without_citations(sentence))
    quoted = [next(g for g in m.groups() if g) for m in QUOTED.finditer(text)]
    words = [w for w in WORD.findall(text) if is_identifier(w)]
    return [*quoted, *words, *NUMBER.findall(text)]


def key_terms(evidence: str) -> list[str]:
    """An evidence's key terms: its checkable tokens, katakana and kanji runs, ASCII words of 4+ letters."""
    text = unicodedata.normalize("NFKC", evidence)
    words = [w for w in WORD.findall(text) if len(w) >= 4 and not is_identifier(w)]
    return list(dict.fromkeys([*checkable(text), *KATAKANA.findall(text), *KANJI.findall(text), *words]))


def found(term: str, text: str) -> bool:
    """`term` in the squashed `text`; a number only as a whole number (15 is not in 15.6 or 150)."""
    term = squash(term)
    if re.fullmatch(r"\d+(?:[.,]\d+)*", term):
        return re.search(rf"(?<!\d)(?<!\d[.,]){re.escape(term)}(?![.,]?\d)", text) is not None
    return term in text


def sentences(answer: str) -> list[tuple[str, list[int]]]:
    """The answer's sentences, each with the passage numbers it cites; a piece holding only
    citations (`。[2]`) belongs to the sentence before it."""
    out: list[tuple[str, list[int]]] = []
    for piece in SENTENCE_END.split(answer):
        numbers = [int(n) for n in CITED.findall(piece)]
        if not CITED.sub("", piece).strip():
            if numbers and out:
                out[-1][1].extend(numbers)
            continue
        out.append((piece.strip(), numbers))
    return out


def missing(sentence: str, passages: list[str]) -> str | None:
    """The first checkable token of `sentence` that no passage of `passages` holds."""
    texts = [squash(p) for p in passages]
    return next((t for t in checkable(sentence) if not any(found(t, p) for p in texts)), None)


def faithful(item: Item) -> Verdict:
    if item.abstained:
        return YES, "declines: no claim"
    if not item.passages:
        return NO, "makes claims, and no passage was given"
    for n, (sentence, _) in enumerate(sentences(item.answer), 1):
        if (token := missing(sentence, list(item.passages))) is not None:
            return NO, f"sentence {n}: {token!r} is in no passage"
    return YES, "every number, identifier and quoted phrase is in the passages"


def cites_support(item: Item) -> Verdict:
    if item.abstained:
        return YES, "declines: nothing cited"
    if not item.citation_valid:
        return NO, "a citation names a passage not given, or breaks the [n] form"
    cited = [(n, s, c) for n, (s, c) in enumerate(sentences(item.answer), 1) if c]
    if not cited:
        return NO, "cites nothing"
    for n, sentence, numbers in cited:
        if (token := missing(sentence, [item.passages[c - 1] for c in numbers])) is not None:
            return NO, f"sentence {n}: {token!r} is not in the passage(s) it cites {numbers}"
    return YES, "each citing sentence's numbers, identifiers and quoted phrases are in its passages"


def correct(item: Item) -> Verdict:
    if item.kind != ANSWERABLE:
        return (YES, "declines, as it should") if item.abstained else (NO, "answers what it should decline")
    if item.abstained:
        return NO, "declines an answerable question"
    answer = squash(without_citations(item.answer))
    for evidence in item.evidence:
        terms = key_terms(evidence) or [evidence]
        if (term := next((t for t in terms if not found(t, answer)), None)) is not None:
            return NO, f"the evidence's {term!r} is not in the answer"
    return YES, "every key term of the evidence is in the answer"


RULES: dict[str, Callable[[Item], Verdict]] = {
    "faithful": faithful,
    "correct": correct,
    "cites_support": cites_support,
}
# per answerer backend, the criteria these rules pass on every answer it can give: an extractive answer
# copies passage sentences with their citations (or declines), so every token it states is in the
# passages it cites, even for the run given no passage (it declines)
BY_CONSTRUCTION: dict[str, tuple[str, ...]] = {"extractive": ("faithful", "cites_support")}
