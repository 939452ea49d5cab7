"""BM25 over chunks with analyzers that work on Japanese and mixed Japanese/English text.

Whitespace tokenizers find almost nothing in Japanese (no spaces between words), which
silently turns a "hybrid" retriever into dense-only. The default analyzer emits character
2- and 3-grams of every run of non-space characters plus whole ASCII words (identifiers,
error codes); `sudachi` is a morphological option. An analyzer's `version` (the fingerprint of its
tokenizer's code, and the versions of the libraries it runs) is part of the index's identity and
the key of the term counts kept per text.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.retrieval.dense import Mask, best

_WORD = re.compile(r"[a-z0-9][a-z0-9_.\-]*[a-z0-9]|[a-z0-9]")
_RUN = re.compile(r"[^\s\u3000、。,.!?！？「」『』()（）\[\]【】:：;；\"'`|*#>]+")


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


@dataclass(frozen=True)
class Analyzer:
    name: str
    tokens: Callable[[str], list[str]]
    outside: str = ""  # what the tokens depend on outside the project (a library's version)

    @property
    def version(self) -> str:
        return f"{self.name}@{fingerprint([self.tokens], deps=[self.outside])}"


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

    return Dictionary(dict="core").tokenizer(mode=SplitMode.B)


_SKIP_POS = {"補助記号", "空白", "助詞", "助動詞"}


def sudachi_tokens(text: str) -> list[str]:
    """Normalised forms of content morphemes (particles, auxiliaries and symbols dropped)."""
    return [
        normalize(m.normalized_form())
        for m in _sudachi().tokenize(unicodedata.normalize("NFKC", text))
        if m.part_of_speech()[0] not in _SKIP_POS and m.surface().strip()
    ]


def sudachi_packages() -> str:
    from importlib.metadata import version

    return f"sudachipy-{version('sudachipy')}+sudachidict-core-{version('sudachidict-core')}"


# every analyzer by name, made only when chosen (sudachi's packages are optional)
ANALYZERS: dict[str, Callable[[], Analyzer]] = {
    "char": lambda: Analyzer("char", char_ngrams),
    "sudachi": lambda: Analyzer("sudachi", sudachi_tokens, sudachi_packages()),
}


def make_analyzer(name: str) -> Analyzer:
    if name not in ANALYZERS:
        raise ValueError(f"unknown analyzer {name!r}; choose {' or '.join(map(repr, ANALYZERS))}")
    return ANALYZERS[name]()


def term_matrix(terms: pa.ChunkedArray, counts: pa.ChunkedArray) -> tuple[sp.csr_matrix, np.ndarray]:
    """Columns `terms` (list of string or dictionary) and `counts` (list of int), one row per text
    -> (texts x vocabulary count matrix, vocabulary). The vocabulary is sorted, so a term's column
    and the order of each row's entries do not depend on which texts came first."""
    flat = [c.flatten() for c in terms.chunks]
    flat = [t if pa.types.is_dictionary(t.type) else t.cast(pa.string()).dictionary_encode() for t in flat]
    lengths = [c.value_lengths().fill_null(0).to_numpy() for c in terms.chunks]
    indptr = np.concatenate([[0], np.cumsum(np.concatenate(lengths))]) if lengths else np.zeros(1)
    data = [c.flatten().to_numpy() for c in counts.chunks]
    if not flat or not sum(len(t) for t in flat):
        return sp.csr_matrix((len(indptr) - 1, 0), dtype=np.float32), np.array([], dtype=object)
    unified = pa.chunked_array(flat).unify_dictionaries()
    dictionary = unified.chunk(0).dictionary
    order = pc.sort_indices(dictionary).to_numpy().astype(np.int64)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    columns = rank[np.concatenate([c.indices.to_numpy() for c in unified.chunks])]
    matrix = sp.csr_matrix(
        (np.concatenate(data).astype(np.float32), columns, indptr.astype(np.int64)),
        shape=(len(indptr) - 1, len(order)),
    )
    matrix.sort_indices()  # only a check when the rows were written sorted
    return matrix, dictionary.take(pa.array(order)).to_numpy(zero_copy_only=False)


def count_terms(docs: list[list[str]]) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """Token lists -> (distinct terms, their counts) list columns, one row per document, terms
    sorted (so the rows of a count matrix come out sorted)."""
    lengths = np.fromiter((len(d) for d in docs), np.int64, len(docs))
    encoded = pa.array(list(itertools.chain.from_iterable(docs)), pa.string()).dictionary_encode()
    vocabulary = max(len(encoded.dictionary), 1)
    order = pc.sort_indices(encoded.dictionary).to_numpy().astype(np.int64)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    # one key per (document, term) occurrence; unique keys in order are the rows' sorted terms
    keys = np.repeat(np.arange(len(docs)), lengths) * vocabulary + rank[encoded.indices.to_numpy()]
    keys, counts = np.unique(keys, return_counts=True)
    per_doc = np.bincount(keys // vocabulary, minlength=len(docs))
    offsets = pa.array(np.concatenate([[0], np.cumsum(per_doc)]), pa.int32())
    terms = encoded.dictionary.take(pa.array(order[keys % vocabulary]))
    return (
        pa.chunked_array([pa.ListArray.from_arrays(offsets, terms)]),
        pa.chunked_array([pa.ListArray.from_arrays(offsets, pa.array(counts, pa.int32()))]),
    )


class BM25:
    """Okapi BM25 over a sparse (documents x vocabulary) term-count matrix; every question is scored
    in one sparse product. Scores are float64 sums taken in vocabulary order, rounded to float32, so
    a document's score depends only on its counts and the collection's statistics.

    Given the documents' `lengths`, `counts` may hold only some terms' columns (those of the
    questions asked): scores are the same, and a query term outside `vocabulary` is an error."""

    def __init__(
        self,
        counts: sp.csr_matrix,
        vocabulary: np.ndarray,
        k1: float = 1.2,
        b: float = 0.75,
        lengths: np.ndarray | None = None,
    ):
        self.k1, self.b = k1, b
        self.counts, self.vocabulary = counts, vocabulary
        self.n = counts.shape[0]
        self.partial = lengths is not None
        # float64 sums of whole numbers: exact
        self.lengths = np.asarray(lengths, np.float64) if self.partial else counts @ np.ones(counts.shape[1])
        self.avgdl = float(self.lengths.mean()) if self.n and self.lengths.sum() else 1.0
        self.df = np.bincount(counts.indices, minlength=len(vocabulary))
        self._scored: tuple[list[list[str]], np.ndarray] | None = None  # the last queries scored

    @classmethod
    def from_tokens(cls, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> BM25:
        return cls(*term_matrix(*count_terms(docs)), k1=k1, b=b)

    def _columns(self, terms: list[str]) -> np.ndarray:
        """Vocabulary column of each term, -1 for a term no document holds."""
        if not len(self.vocabulary):
            return np.full(len(terms), -1)
        at = np.minimum(np.searchsorted(self.vocabulary, terms), len(self.vocabulary) - 1)
        return np.where(self.vocabulary[at] == np.asarray(terms, dtype=object), at, -1)

    def score_matrix(self, queries: list[list[str]]) -> np.ndarray:
        """(documents, queries) float32 scores, read-only; each distinct query term counts once. The
        same queries asked again (a search, then the lexical check) are not scored again."""
        if self._scored is not None and self._scored[0] == queries:
            return self._scored[1]
        terms = sorted({t for q in queries for t in q})
        columns = self._columns(terms)
        known = columns >= 0
        if self.partial and not known.all():
            missing = [t for t, k in zip(terms, known) if not k]
            raise ValueError(
                f"this BM25 holds only the columns of the terms it was built for, not {missing[:5]}"
            )
        terms, columns = [t for t, k in zip(terms, known) if k], columns[known]
        hits = self.counts[:, columns].tocsr()
        hits.sort_indices()
        tf = hits.data.astype(np.float64)
        df = self.df[columns].astype(np.float64)
        idf = np.log(1 + (self.n - df + 0.5) / (df + 0.5))
        norm = self.k1 * (1 - self.b + self.b * self.lengths / self.avgdl)
        rows = np.repeat(np.arange(self.n), np.diff(hits.indptr))
        hits.data = idf[hits.indices] * tf * (self.k1 + 1) / (tf + norm[rows])
        slot = {t: i for i, t in enumerate(terms)}
        out = np.zeros((self.n, len(queries)), np.float32)
        for start in range(0, len(queries), 256):  # bounds the dense (documents, queries) block
            block = queries[start : start + 256]
            present = np.zeros((len(terms), len(block)))
            for j, query in enumerate(block):
                present[[slot[t] for t in set(query) if t in slot], j] = 1.0
            out[:, start : start + len(block)] = hits @ present
        out.flags.writeable = False
        self._scored = ([list(q) for q in queries], out)
        return out

    def search_many(
        self,
        queries: list[list[str]],
        k: int,
        tiebreak: np.ndarray | None = None,
        masks: list[Mask] | None = None,
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """(positions, scores) of the best k readable documents (`masks`, one per query) with a
        positive score for each query, best first; ties go to the lower `tiebreak` rank."""
        scores = self.score_matrix(queries)
        masks = masks or [None] * scores.shape[1]
        out = []
        for column, mask in zip(scores.T, masks):
            positions = best(column, k, tiebreak, positive=True, allowed=mask)
            out.append((positions, column[positions]))
        return out

    def search(
        self, query: list[str], k: int, tiebreak: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        return self.search_many([query], k, tiebreak)[0]
