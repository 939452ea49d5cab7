"""Retrieval that costs what changed, with results equal to a from-scratch `retrieve`.

Dense: each question's top 2 x `depth` chunks are kept on disk with the set of chunks scored.
A pair's cosine score does not depend on the other chunks, so after an edit only the new chunks
are scored and merged into each kept list: a chunk left out of a list ranks below all of it, so
the list's survivors plus the new chunks give the exact ranking down to its last survivor. A
question that lost more than half its list (or that is new) is scored against every chunk again.
BM25: N, average length and document frequencies change with every edit, so its scores are
recomputed, vectorized, from each text's length and counts of the questions' terms, kept on
disk; only new texts' counts are read, from the token store (a text is tokenized once).
Fusions, `+rerank` and `+parent` are computed from the base lists as in `retrieve`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rag_pipeline.lib.bm25_cache import question_bm25
from rag_pipeline.lib.rerank import HttpReranker
from rag_pipeline.lib.retrieval import best, dense_scores, top_k
from rag_pipeline.lib.retrievers import (
    ChunkIndex,
    Hits,
    RetrievalSettings,
    assemble,
    base_hits,
    dense_vectors,
    parse_retriever,
    plan,
)
from rag_pipeline.lib.segments import text_hash
from rag_pipeline.lib.storage import write_table


def retrieve_incremental(
    index: ChunkIndex,
    retrievers: list[str],
    question_ids: list[str],
    query_vectors: np.ndarray,
    query_texts: list[str],
    settings: RetrievalSettings,
    reranker: HttpReranker | None = None,
    *,
    cache_dir: Path,
    version: str,
) -> pd.DataFrame:
    """What `retrieve` returns, reusing what the last run kept under `cache_dir` (dense candidate
    lists, BM25's lengths and question-term columns; one directory per strategy). `version` names
    what the query and chunk vectors depend on (the embedding_version)."""
    specs, bases = plan(retrievers)
    depth = max(settings.depth, settings.candidate_k)
    tokens = (
        [index.analyzer.tokens(q) for q in query_texts] if any(b.startswith("bm25") for b in bases) else []
    )
    base = {}
    for name in bases:
        if parse_retriever(name).ranker == "dense":
            path = Path(cache_dir) / f"{name}.parquet"
            base[name] = cached_dense_hits(index, name, query_vectors, query_texts, depth, path, version)
        else:
            contextual = parse_retriever(name).contextual
            path = Path(cache_dir) / f"{name}.terms.parquet"
            index.use_bm25(contextual, question_bm25(index, contextual, tokens, path))
            base[name] = base_hits(index, name, query_vectors, tokens, depth)
    return assemble(index, specs, base, question_ids, query_texts, settings, reranker)


@dataclass
class Candidates:
    """Chunks scored (`chunk_id:text hash`) and, per question text hash, the best ones and their scores."""

    scored: pd.Index
    lists: dict[str, tuple[np.ndarray, np.ndarray]]


KEEP = 2  # lists keep KEEP x depth chunks: a question is searched again only when over half its list went


def cached_dense_hits(
    index: ChunkIndex,
    name: str,
    query_vectors: np.ndarray,
    query_texts: list[str],
    depth: int,
    path: Path,
    version: str,
) -> list[Hits]:
    """Each question's top `depth` chunks by cosine, from the lists kept at `path` and the new chunks."""
    vectors = dense_vectors(index, name)
    hashes = index.text_hashes(parse_retriever(name).contextual)
    members = pd.Index([f"{c}:{h}" for c, h in zip(index.chunks["chunk_id"].tolist(), hashes)], dtype=object)
    keep = KEEP * depth
    stamp = cache_stamp(name, version, keep)
    kept = load_candidates(path, stamp)
    new = np.flatnonzero(~members.isin(kept.scored)) if kept is not None else np.arange(len(members))
    questions = [text_hash(q) for q in query_texts]
    found: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    merge: list[tuple[int, np.ndarray, np.ndarray, bool]] = []
    for qi, key in enumerate(questions):
        if kept is not None and key in kept.lists:
            ids, scores = kept.lists[key]
            at = members.get_indexer(ids)
            alive = at >= 0
            complete = len(ids) == len(kept.scored)  # it held every chunk scored
            if complete or alive.sum() >= depth:
                merge.append((qi, at[alive], scores[alive], complete))
    if merge:
        fresh = dense_scores(vectors[new], query_vectors[[qi for qi, *_ in merge]])
        for row, (qi, at, scores, complete) in enumerate(merge):
            candidates = np.concatenate([at, new])
            joined = np.concatenate([scores, fresh[row]])
            order = best(joined, len(candidates), index.tiebreak[candidates])
            if not complete:
                # a chunk left out of the kept list ranks below every survivor of it: the ranking
                # is known down to the last survivor
                order = order[: np.flatnonzero(order < len(at))[-1] + 1]
            found[qi] = (candidates[order[:keep]], joined[order[:keep]])
    again = [qi for qi in range(len(questions)) if qi not in found]
    if again:
        positions, scores = top_k(vectors, query_vectors[again], keep, index.tiebreak)
        found |= {qi: (p, s) for qi, p, s in zip(again, positions, scores)}
    lists = {questions[qi]: (members[p].to_numpy(), s) for qi, (p, s) in found.items()}
    save_candidates(path, stamp, Candidates(members, lists))
    return [
        list(zip(found[qi][0][:depth].tolist(), found[qi][1][:depth].tolist()))
        for qi in range(len(questions))
    ]


def cache_stamp(name: str, version: str, keep: int) -> str:
    """What kept lists depend on besides the chunks and question texts they are keyed by."""
    return json.dumps({"retriever": name, "version": version, "keep": keep}, sort_keys=True)


def load_candidates(path: Path, stamp: str) -> Candidates | None:
    """The kept lists, or None when there are none or they were made with other inputs."""
    if not path.exists():
        return None
    table = pq.read_table(path)
    if (table.schema.metadata or {}).get(b"stamp", b"").decode() != stamp:
        return None
    frame = table.to_pandas()
    scored = frame["question"].isna()
    lists = {
        q: (group["chunk"].to_numpy(), group["score"].to_numpy(np.float32))
        for q, group in frame[~scored].groupby("question", sort=False)
    }
    return Candidates(pd.Index(frame.loc[scored, "chunk"], dtype=object), lists)


def save_candidates(path: Path, stamp: str, kept: Candidates) -> None:
    questions = [q for q, (ids, _) in kept.lists.items() for _ in ids]
    chunks = [kept.scored.to_numpy(), *(ids for ids, _ in kept.lists.values())]
    scores = [np.full(len(kept.scored), np.nan, np.float32), *(s for _, s in kept.lists.values())]
    table = pa.table(
        {
            "question": pa.array([None] * len(kept.scored) + questions, pa.string()),
            "chunk": pa.array(np.concatenate(chunks).astype(str), pa.string()),
            "score": pa.array(np.concatenate(scores).astype(np.float32)),
        }
    )
    write_table(
        table.replace_schema_metadata({"stamp": stamp}), path, compression="snappy"
    )  # rewritten every run
