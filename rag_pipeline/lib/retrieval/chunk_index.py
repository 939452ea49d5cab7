"""One strategy's chunks and their vectors, as every retriever reads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from rag_pipeline.lib.chunking import contextual_text
from rag_pipeline.lib.core import text_hash
from rag_pipeline.lib.retrieval.lexical import BM25, Analyzer
from rag_pipeline.lib.retrieval.tokens import TokenStore


@dataclass
class ChunkIndex:
    """One strategy's chunks (chunk_id, note, start, end, n_chars, heading_path, parent_*, text)
    with their passage vectors (plain and, when built, contextual). With a `token_store`, BM25 is
    built from cached term counts, tokenizing only texts never seen before."""

    chunks: pd.DataFrame
    vectors: np.ndarray
    analyzer: Analyzer
    ctx_vectors: np.ndarray | None = None
    token_store: TokenStore | None = None
    _bm25: dict[bool, BM25] = field(default_factory=dict)
    _hashes: dict[bool, list[str]] = field(default_factory=dict)

    def texts(self, contextual: bool) -> list[str]:
        return self.ctx_texts if contextual else self.plain_texts

    def texts_at(self, contextual: bool, rows: np.ndarray) -> list[str]:
        """The texts of the chunks at `rows`, built for these rows only."""
        plain = self.chunks["text"].take(rows).tolist()
        if not contextual:
            return plain
        return [contextual_text(h, t) for h, t in zip(self.chunks["heading_path"].take(rows).tolist(), plain)]

    def text_hashes(self, contextual: bool) -> list[str]:
        """Each chunk's text hash: its `text_hash` / `ctx_text_hash` when the chunks hold them."""
        column = "ctx_text_hash" if contextual else "text_hash"
        if contextual not in self._hashes and column in self.chunks and self.chunks[column].notna().all():
            self._hashes[contextual] = self.chunks[column].tolist()
        elif contextual not in self._hashes:
            self._hashes[contextual] = [text_hash(t) for t in self.texts(contextual)]
        return self._hashes[contextual]

    def bm25(self, contextual: bool) -> BM25:
        if contextual not in self._bm25:
            texts = self.texts(contextual)
            self._bm25[contextual] = (
                self.token_store.bm25(texts, self.text_hashes(contextual))
                if self.token_store is not None
                else BM25.from_tokens([self.analyzer.tokens(t) for t in texts])
            )
        return self._bm25[contextual]

    def use_bm25(self, contextual: bool, bm25: BM25) -> None:
        """Score with this BM25 (e.g. one holding only the questions' terms) from now on."""
        self._bm25[contextual] = bm25

    @cached_property
    def plain_texts(self) -> list[str]:
        return self.chunks["text"].tolist()

    @cached_property
    def ctx_texts(self) -> list[str]:
        return [contextual_text(h, t) for h, t in zip(self.chunks["heading_path"].tolist(), self.plain_texts)]

    @cached_property
    def tiebreak(self) -> np.ndarray:
        """Each chunk's rank in chunk_id order: equal scores are ordered by chunk_id, so a ranking
        does not depend on the order of the rows."""
        order = np.argsort(self.chunks["chunk_id"].to_numpy(dtype=str), kind="stable")
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        return rank
