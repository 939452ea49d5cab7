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

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from rag_pipeline.lib.core import readable_mask
from rag_pipeline.lib.retrieval.chunk_index import ChunkIndex
from rag_pipeline.lib.retrieval.dense import Mask, top_k
from rag_pipeline.lib.retrieval.fusion import merge_parents, rrf, score_fusion
from rag_pipeline.lib.retrieval.rerank import HttpReranker

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
        fused = FUSED if RANKERS[self.ranker].fuse else (self.ranker,)
        return tuple(f"{r}{ctx}" for r in fused)

    @property
    def uses_embedder(self) -> bool:
        """Whether the embedder's vectors rank it: dense, and the fusions with dense."""
        return any(not RANKERS[i.split("+")[0]].lexical for i in self.inputs)

    @property
    def uses_analyzer(self) -> bool:
        """Whether BM25 terms rank it: bm25, and the fusions with it."""
        return any(RANKERS[i.split("+")[0]].lexical for i in self.inputs)

    @property
    def settings_read(self) -> frozenset[str]:
        """The `RetrievalSettings` fields that can move its ranking (`depth` cuts every one)."""
        ranker = RANKERS[self.ranker]
        fused = {"candidate_k"} if ranker.fuse else set()
        return frozenset({"depth", *ranker.reads, *fused, *(("rerank_k",) if self.rerank else ())})


def parse_retriever(name: str) -> RetrieverSpec:
    ranker, *flags = name.split("+")
    if ranker not in RANKERS or set(flags) - {"ctx", "rerank", "parent"} or len(set(flags)) != len(flags):
        raise ValueError(
            f"unknown retriever {name!r}: a ranker of {tuple(RANKERS)} optionally followed by +ctx, +rerank, +parent"
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
    found = RANKERS[spec.ranker].hits(index, spec.contextual, query_vectors, query_tokens, k, masks)
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


def dense_vectors(index: ChunkIndex, contextual: bool) -> np.ndarray:
    vectors = index.ctx_vectors if contextual else index.vectors
    if vectors is None:
        raise ValueError("dense+ctx: contextual vectors were not built")
    return vectors


def query_tokens(index: ChunkIndex, bases: list[str], texts: list[str]) -> list[list[str]]:
    """The questions' BM25 terms, when one of the base retrievers ranks by them."""
    lexical = any(RANKERS[parse_retriever(b).ranker].lexical for b in bases)
    return [index.analyzer.tokens(q) for q in texts] if lexical else []


def plan(retrievers: list[str]) -> tuple[list[RetrieverSpec], list[str]]:
    """The configurations to report (those named, then every fusion input) and the base
    retrievers they are computed from."""
    # a fusion's inputs are reported as runs of their own: their candidate recall is the fusion's ceiling
    named = [parse_retriever(r) for r in retrievers]
    specs = [parse_retriever(r) for r in dict.fromkeys([*retrievers, *(i for s in named for i in s.inputs)])]
    return specs, list(dict.fromkeys(i for s in specs for i in s.inputs))


def dense_hits(index: ChunkIndex, contextual: bool, vectors: np.ndarray, tokens, k: int, masks) -> list:
    return top_k(dense_vectors(index, contextual), vectors, k, index.tiebreak, masks)


def bm25_hits(index: ChunkIndex, contextual: bool, vectors: np.ndarray, tokens, k: int, masks) -> list:
    return index.bm25(contextual).search_many(tokens, k, index.tiebreak, masks)


def reciprocal_rank(runs: list[Hits], settings: RetrievalSettings) -> Hits:
    return rrf(runs, settings.rrf_k)


def weighted(runs: list[Hits], settings: RetrievalSettings, method: str) -> Hits:
    return score_fusion(runs, (settings.dense_weight, 1 - settings.dense_weight), method)


@dataclass(frozen=True)
class Ranker:
    """A base ranker ranks the readable chunks itself (`hits`; `lexical`: by BM25 terms, else by the
    embedder's vectors); a fusion (`fuse`) merges the `FUSED` rankers' candidate lists."""

    hits: Callable[..., list] | None = None
    fuse: Callable[[list[Hits], RetrievalSettings], Hits] | None = None
    lexical: bool = False
    reads: tuple[str, ...] = ()  # the `RetrievalSettings` fields its fusion reads


# every ranker by name: a configuration's ranker is looked up here, and nowhere compared by name
RANKERS = {
    "dense": Ranker(hits=dense_hits),
    "bm25": Ranker(hits=bm25_hits, lexical=True),
    "rrf": Ranker(fuse=reciprocal_rank, reads=("rrf_k",)),
    "minmax": Ranker(fuse=partial(weighted, method="minmax"), reads=("dense_weight",)),
    "zscore": Ranker(fuse=partial(weighted, method="zscore"), reads=("dense_weight",)),
}
FUSED = ("dense", "bm25")  # what a fusion fuses, in the order of its weights (`dense_weight` first)


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
    tokens = query_tokens(index, bases, queries.texts)
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
    parents = parent_spans(chunks, specs)
    out: dict[str, list] = {
        c: [] for c in ("question_id", "retriever", "rank", "score", "position", "parent")
    }
    for spec in specs:
        for qi, qid in enumerate(question_ids):
            found = {i: base[i][qi] for i in spec.inputs}
            hits = ranked_hits(index, spec, found, query_texts[qi], settings, reranker, parents)
            out["question_id"] += [qid] * len(hits)
            out["retriever"] += [spec.name] * len(hits)
            out["rank"] += range(1, len(hits) + 1)
            out["score"] += [float(score) for _, score in hits]
            out["position"] += [int(position) for position, _ in hits]
            out["parent"] += [spec.parent] * len(hits)
    return ranked_frame(chunks, out)


def ranked_hits(
    index: ChunkIndex,
    spec: RetrieverSpec,
    base: dict[str, Hits],
    query_text: str,
    settings: RetrievalSettings,
    reranker: HttpReranker | None,
    parents: tuple[np.ndarray, list],
) -> Hits:
    """One question's ranking by one configuration from its base retrievers' hits (`base`, by input):
    fused, reranked, merged into parents (`parents`: each chunk's parent id, each chunk's parent span),
    cut to `depth`."""
    if fuse := RANKERS[spec.ranker].fuse:
        hits = fuse([base[i][: settings.candidate_k] for i in spec.inputs], settings)
    else:
        hits = base[spec.inputs[0]]
    if spec.rerank:
        if reranker is None:
            raise ValueError(f"{spec.name}: no reranker configured (set the retrieval resource's rerank_url)")
        head = hits[: settings.rerank_k]
        scores = reranker.scores(query_text, [index.plain_texts[p] for p, _ in head])
        hits = sorted(zip((p for p, _ in head), scores), key=lambda h: -h[1])
    if spec.parent:
        hits = merge_parents(hits, *parents)
    return hits[: settings.depth]


def parent_spans(chunks: pd.DataFrame, specs: list[RetrieverSpec]) -> tuple[np.ndarray, list]:
    """What `+parent` merges by: each chunk's parent id, and (only when a configuration merges) its
    parent's span, from plain lists: a Series of strings iterates slowly."""
    spans = ["note", "parent_start", "parent_end"]
    parent_span = list(zip(*(chunks[c].tolist() for c in spans))) if any(s.parent for s in specs) else []
    return chunks["parent_id"].to_numpy(), parent_span


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
