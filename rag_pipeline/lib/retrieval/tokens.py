"""Content-addressed term counts: (analyzer version, hash of the exact text) -> {term: count}; the
store's key is the analyzer's version (its tokenizer's fingerprint) and the fingerprint of the code
that counts, writes and reads the rows.

BM25's statistics (N, average length, document frequencies) change with every edit, but a
text's term counts do not: they are kept in immutable Parquet segments under
`<root>/<analyzer key>/`, so a text is tokenized once and an index is rebuilt from the counts.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from rag_pipeline.lib.core import AnyPath, SegmentStore, text_hash, version_dir
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.retrieval.lexical import BM25, Analyzer, count_terms, term_matrix


class TokenStore(SegmentStore):
    row_group_size = 1024
    merge_bytes = 8 << 20  # compressed term lists: a merge holds several times this in memory
    dictionary_columns = ("terms.list.element",)
    # characters tokenized per segment written: bounds memory (a 2-3-gram is a Python string of its
    # own, and freed small objects are not returned to the system at once), keeps progress
    batch_chars = 250_000

    def __init__(self, root: str | AnyPath, analyzer: Analyzer):
        self.analyzer = analyzer
        rows = fingerprint([TokenStore.tokenize_missing, TokenStore.counts])[:12]
        super().__init__(
            version_dir(
                root,
                f"{analyzer.version}|rows@{rows}",
                {"analyzer": analyzer.name, "version": analyzer.version},
            )
        )

    def tokenize_missing(self, texts: list[str], hashes: list[str]) -> int:
        """Count the terms of the texts not stored yet; returns how many were tokenized."""
        todo: dict[str, str] = {}
        for text, h, found in zip(texts, hashes, self.contains(hashes)):
            if not found:
                todo.setdefault(h, text)
        batch: list[str] = []
        size = 0
        for i, h in enumerate(todo):
            batch.append(h)
            size += len(todo[h])
            if size >= self.batch_chars or i == len(todo) - 1:
                terms, counts = count_terms([self.analyzer.tokens(todo[b]) for b in batch])
                self.append(pa.table({"text_hash": batch, "terms": terms, "counts": counts}))
                batch, size = [], 0
        return len(todo)

    def counts(self, texts: list[str], hashes: list[str] | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
        """(texts x vocabulary) term counts and the sorted vocabulary, tokenizing only new texts
        (`hashes`: their `text_hash`, when known)."""
        hashes = hashes if hashes is not None else [text_hash(t) for t in texts]
        self.tokenize_missing(texts, hashes)
        unique, inverse = np.unique(np.asarray(hashes, dtype=object), return_inverse=True)
        parts = self.read(unique.tolist(), ["terms", "counts"])
        matrix, vocabulary = term_matrix(
            pa.chunked_array([c for t, _ in parts for c in t.column("terms").chunks], _TERMS),
            pa.chunked_array([c for t, _ in parts for c in t.column("counts").chunks], _COUNTS),
        )
        read_order = np.concatenate([p for _, p in parts]) if parts else np.zeros(0, np.int64)
        row_of = np.empty(len(unique), np.int64)
        row_of[read_order] = np.arange(len(read_order))
        return matrix[row_of[inverse.ravel()]], vocabulary

    def bm25(
        self, texts: list[str], hashes: list[str] | None = None, k1: float = 1.2, b: float = 0.75
    ) -> BM25:
        return BM25(*self.counts(texts, hashes), k1=k1, b=b)


_TERMS = pa.list_(pa.dictionary(pa.int32(), pa.string()))
_COUNTS = pa.list_(pa.int32())
