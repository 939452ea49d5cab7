"""BM25 over chunks with analyzers that work on Japanese and mixed Japanese/English text.

Whitespace tokenizers find almost nothing in Japanese (no spaces between words), which
silently turns a "hybrid" retriever into dense-only. The default analyzer emits character
2- and 3-grams of every run of non-space characters plus whole ASCII words (identifiers,
error codes); `sudachi` is a morphological option. An analyzer's `version` is part of the
index's identity.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-]*[a-z0-9]|[a-z0-9]")
_RUN = re.compile(r"[^\s\u3000、。,.!?！？「」『』()（）\[\]【】:：;；\"'`|*#>]+")


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


@dataclass(frozen=True)
class Analyzer:
    name: str
    version: str
    tokens: Callable[[str], list[str]]


def char_ngrams(text: str, ns: tuple[int, ...] = (2, 3)) -> list[str]:
    """Whole ASCII words, and the n-grams of each run of non-space, non-punctuation characters
    (a run shorter than n contributes itself)."""
    text = normalize(text)
    out = _WORD.findall(text)
    for run in _RUN.findall(text):
        for n in ns:
            if len(run) < n:
                if n == ns[0]:
                    out.append(run)
                continue
            out.extend(run[i : i + n] for i in range(len(run) - n + 1))
    return out


@cache
def _sudachi():
    from sudachipy import Dictionary, SplitMode  # optional: `pip install sudachipy sudachidict-core`

    return Dictionary(dict="core").create(), SplitMode.B


_SKIP_POS = {"補助記号", "空白", "助詞", "助動詞"}


def sudachi_tokens(text: str) -> list[str]:
    """Normalised forms of content morphemes (particles, auxiliaries and symbols dropped)."""
    tokenizer, mode = _sudachi()
    return [
        normalize(m.normalized_form())
        for m in tokenizer.tokenize(unicodedata.normalize("NFKC", text), mode)
        if m.part_of_speech()[0] not in _SKIP_POS and m.surface().strip()
    ]


def sudachi_version() -> str:
    from importlib.metadata import version

    return f"sudachi-{version('sudachipy')}+core-{version('sudachidict-core')}:B:content-v1"


def make_analyzer(name: str) -> Analyzer:
    if name == "char":
        return Analyzer("char", "char-2-3gram+ascii-words-v1", char_ngrams)
    if name == "sudachi":
        return Analyzer("sudachi", sudachi_version(), sudachi_tokens)
    raise ValueError(f"unknown analyzer {name!r}; choose 'char' or 'sudachi'")


class BM25:
    """Okapi BM25 with postings in numpy arrays; scores only the documents a query term hits."""

    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.n = len(docs)
        self.lengths = np.array([len(d) for d in docs], dtype=np.float32)
        self.avgdl = float(self.lengths.mean()) if self.n and self.lengths.sum() else 1.0
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for doc_id, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                ids, tfs = postings.setdefault(term, ([], []))
                ids.append(doc_id)
                tfs.append(tf)
        self.postings = {t: (np.array(i), np.array(f, dtype=np.float32)) for t, (i, f) in postings.items()}

    def idf(self, term: str) -> float:
        df = len(self.postings[term][0])
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query: list[str]) -> np.ndarray:
        scores = np.zeros(self.n, dtype=np.float32)
        norm = self.k1 * (1 - self.b + self.b * self.lengths / self.avgdl)
        for term in set(query):
            if term not in self.postings:
                continue
            ids, tf = self.postings[term]
            scores[ids] += self.idf(term) * tf * (self.k1 + 1) / (tf + norm[ids])
        return scores

    def search(self, query: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, scores) of the best k documents with a positive score, best first."""
        scores = self.scores(query)
        hit = np.flatnonzero(scores > 0)
        order = hit[np.lexsort((hit, -scores[hit]))][:k]
        return order, scores[order]
