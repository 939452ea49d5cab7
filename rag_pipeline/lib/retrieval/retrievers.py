"""Retriever configurations over one strategy's chunks.

A configuration is named `<ranker>[+ctx][+parent]`:
- ranker `dense` (exact cosine), `bm25`, or a fusion of both fed `candidate_k` results each:
  `rrf` (Reciprocal Rank Fusion), `minmax` or `zscore` (weighted normalised scores);
- `+ctx`: chunks are embedded and indexed with their note title and heading path in front
  (the text passed on stays the original);
- `+rerank`: the top `rerank_k` results are re-ordered by an HTTP cross-encoder reranker;
- `+parent`: the small chunks retrieved stand for their parent section, which is what is
  passed on; duplicates of one parent are merged at the best rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from rag_pipeline.lib.chunking import contextual_text
from rag_pipeline.lib.core import readable_mask, text_hash
from rag_pipeline.lib.retrieval.dense import Mask, top_k
from rag_pipeline.lib.retrieval.fusion import merge_parents, rrf, score_fusion
from rag_pipeline.lib.retrieval.lexical import BM25, Analyzer
from rag_pipeline.lib.retrieval.rerank import HttpReranker
from rag_pipeline.lib.retrieval.tokens import TokenStore

RANKERS = ("dense", "bm25", "rrf", "minmax", "zscore")
FUSIONS = ("rrf", "minmax", "zscore")
# `dense+ctx` (and the fusions over it) embed every passage a second time, which doubles the cold
# build's largest cost: opt-in through RAG_RETRIEVERS. `bm25+ctx` costs nothing more to build
DEFAULT_RETRIEVERS = ("dense", "bm25", "rrf", "minmax", "bm25+ctx", "rrf+parent")


@dataclass(frozen=True)
class RetrieverSpec:
    name: str
    ranker: str
    contextual: bool
    parent: bool
    rerank: bool = False

    @property
    def inputs(self) -> tuple[str, ...]:
        """The base retrievers a fusion is fed by (itself for a base retriever)."""
        ctx = "+ctx" if self.contextual else ""
        return (f"dense{ctx}", f"bm25{ctx}") if self.ranker in FUSIONS else (f"{self.ranker}{ctx}",)

    @property
    def uses_embedder(self) -> bool:
        """Whether the embedder's vectors rank it: dense, and the fusions with dense."""
        return any(i.startswith("dense") for i in self.inputs)


def parse_retriever(name: str) -> RetrieverSpec:
    ranker, *flags = name.split("+")
    if ranker not in RANKERS or set(flags) - {"ctx", "rerank", "parent"} or len(set(flags)) != len(flags):
        raise ValueError(
            f"unknown retriever {name!r}: a ranker of {RANKERS} optionally followed by +ctx, +rerank, +parent"
        )
    return RetrieverSpec(name, ranker, "ctx" in flags, "parent" in flags, "rerank" in flags)


@dataclass(frozen=True)
class RetrievalSettings:
    candidate_k: int = 50
    rrf_k: float = 60.0
    dense_weight: float = 0.5
    depth: int = 50  # results kept per question and configuration
    rerank_k: int = 20
    context_k: int = 5  # units passed to the LLM at most
    context_chars: int = 4000  # and characters

    def __post_init__(self):
        if not self.candidate_k >= self.rerank_k >= self.context_k >= 1:
            raise ValueError(
                f"need candidate_k >= rerank_k >= context_k >= 1, got candidate_k={self.candidate_k}, "
                f"rerank_k={self.rerank_k}, context_k={self.context_k}"
            )


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


Hits = list[tuple[int, float]]  # (chunk position, score), best first


def base_hits(
    index: ChunkIndex,
    name: str,
    query_vectors: np.ndarray,
    query_tokens: list[list[str]],
    k: int,
    masks: list[Mask] | None = None,
) -> list[Hits]:
    """Each question's k best readable chunks by one base retriever (the filter comes first)."""
    spec = parse_retriever(name)
    if spec.ranker == "dense":
        found = top_k(dense_vectors(index, name), query_vectors, k, index.tiebreak, masks)
    else:
        found = index.bm25(spec.contextual).search_many(query_tokens, k, index.tiebreak, masks)
    return [list(zip(p.tolist(), s.tolist())) for p, s in found]


def access_masks(index: ChunkIndex, groups: list[tuple[str, ...] | None] | None) -> list[Mask] | None:
    """Per question, which chunks its asker may read (None where the asker may read everything)."""
    if groups is None:
        return None
    access = index.chunks["access"].tolist() if "access" in index.chunks else [[]] * len(index.chunks)
    masks: dict[tuple[str, ...] | None, Mask] = {None: None}
    for g in groups:
        if g not in masks:
            masks[g] = readable_mask(access, g)
    return [masks[g] for g in groups]


def dense_vectors(index: ChunkIndex, name: str) -> np.ndarray:
    vectors = index.ctx_vectors if parse_retriever(name).contextual else index.vectors
    if vectors is None:
        raise ValueError(f"{name}: contextual vectors were not built")
    return vectors


def plan(retrievers: list[str]) -> tuple[list[RetrieverSpec], list[str]]:
    """The configurations to report (those named, then every fusion input) and the base
    retrievers they are computed from."""
    # a fusion's inputs are reported as runs of their own: their candidate recall is the fusion's ceiling
    named = [parse_retriever(r) for r in retrievers]
    specs = [parse_retriever(r) for r in dict.fromkeys([*retrievers, *(i for s in named for i in s.inputs)])]
    return specs, list(dict.fromkeys(i for s in specs for i in s.inputs))


@dataclass(frozen=True)
class Queries:
    """The questions asked of an index: ids, query vectors and texts, and each asker's groups
    (`groups` None: every asker may read every chunk)."""

    ids: list[str]
    vectors: np.ndarray
    texts: list[str]
    groups: list[tuple[str, ...] | None] | None = None


def retrieve(
    index: ChunkIndex,
    retrievers: list[str],
    queries: Queries,
    settings: RetrievalSettings,
    reranker: HttpReranker | None = None,
) -> pd.DataFrame:
    """Ranked rows (question_id, retriever, rank, score, chunk_id, note, start, end, n_chars, access)
    of every configuration named and of every fusion input; each question sees only the chunks its
    asker may read."""
    specs, bases = plan(retrievers)
    lexical = any(b.startswith("bm25") for b in bases)
    tokens = [index.analyzer.tokens(q) for q in queries.texts] if lexical else []
    depth = max(settings.depth, settings.candidate_k)
    masks = access_masks(index, queries.groups)
    base = {name: base_hits(index, name, queries.vectors, tokens, depth, masks) for name in bases}
    return assemble(index, specs, base, queries.ids, queries.texts, settings, reranker)


def assemble(
    index: ChunkIndex,
    specs: list[RetrieverSpec],
    base: dict[str, list[Hits]],
    question_ids: list[str],
    query_texts: list[str],
    settings: RetrievalSettings,
    reranker: HttpReranker | None = None,
) -> pd.DataFrame:
    """Every configuration's ranked rows from the base retrievers' hits (fusions, rerank, parents)."""
    chunks = index.chunks
    parent_of = chunks["parent_id"].to_numpy()
    # from plain lists, and only when a configuration needs them: a Series of strings iterates slowly
    spans = ["note", "parent_start", "parent_end"]
    parent_span = list(zip(*(chunks[c].tolist() for c in spans))) if any(s.parent for s in specs) else []
    out: dict[str, list] = {
        c: [] for c in ("question_id", "retriever", "rank", "score", "position", "parent")
    }
    for spec in specs:
        for qi, qid in enumerate(question_ids):
            if spec.ranker in FUSIONS:
                runs = [base[i][qi][: settings.candidate_k] for i in spec.inputs]
                if spec.ranker == "rrf":
                    hits = rrf(runs, settings.rrf_k)
                else:
                    weights = (settings.dense_weight, 1 - settings.dense_weight)
                    hits = score_fusion(runs, weights, spec.ranker)
            else:
                hits = base[spec.inputs[0]][qi]
            if spec.rerank:
                if reranker is None:
                    raise ValueError(
                        f"{spec.name}: no reranker configured (set the retrieval resource's rerank_url)"
                    )
                head = hits[: settings.rerank_k]
                scores = reranker.scores(query_texts[qi], [index.plain_texts[p] for p, _ in head])
                hits = sorted(zip((p for p, _ in head), scores), key=lambda h: -h[1])
            if spec.parent:
                hits = merge_parents(hits, parent_of, parent_span)
            hits = hits[: settings.depth]
            out["question_id"] += [qid] * len(hits)
            out["retriever"] += [spec.name] * len(hits)
            out["rank"] += range(1, len(hits) + 1)
            out["score"] += [float(score) for _, score in hits]
            out["position"] += [int(position) for position, _ in hits]
            out["parent"] += [spec.parent] * len(hits)
    return ranked_frame(chunks, out)


def ranked_frame(chunks: pd.DataFrame, out: dict[str, list]) -> pd.DataFrame:
    """The rows with the unit each rank passes on: the chunk, or for `+parent` its parent section."""
    at = chunks.iloc[out.pop("position")].reset_index(drop=True)
    parent = np.array(out.pop("parent"), dtype=bool)
    frame = pd.DataFrame(out)
    frame["chunk_id"] = np.where(parent, at["parent_id"], at["chunk_id"])
    frame["note"] = at["note"]
    frame["start"] = np.where(parent, at["parent_start"], at["start"])
    frame["end"] = np.where(parent, at["parent_end"], at["end"])
    frame["n_chars"] = np.where(parent, at["parent_end"] - at["parent_start"], at["n_chars"])
    # a parent section lies in its chunk's note, so it has the note's groups too
    frame["access"] = at["access"] if "access" in at else [[] for _ in range(len(at))]
    return frame


def lexical_miss_share(index: ChunkIndex, query_texts: list[str], contextual: bool = False) -> float:
    """Share of questions for which BM25 finds no chunk sharing a single token."""
    if not query_texts:
        return 0.0
    scores = index.bm25(contextual).score_matrix([index.analyzer.tokens(q) for q in query_texts])
    return float((~(scores > 0).any(axis=0)).mean())
