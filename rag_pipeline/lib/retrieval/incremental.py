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

from rag_pipeline.lib.core import AnyPath, as_path, read_arrow, text_hash, write_arrow
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.retrieval.bm25_terms import question_bm25
from rag_pipeline.lib.retrieval.chunk_index import ChunkIndex
from rag_pipeline.lib.retrieval.dense import Mask, best, dense_scores, top_k
from rag_pipeline.lib.retrieval.rerank import HttpReranker
from rag_pipeline.lib.retrieval.retrievers import (
    RANKERS,
    Hits,
    Queries,
    RetrievalSettings,
    access_masks,
    assemble,
    base_hits,
    dense_vectors,
    parse_retriever,
    plan,
    query_tokens,
)


def retrieve_incremental(
    index: ChunkIndex,
    retrievers: list[str],
    queries: Queries,
    settings: RetrievalSettings,
    reranker: HttpReranker | None = None,
    *,
    cache_dir: Path,
    version: str,
) -> pd.DataFrame:
    """What `retrieve` returns, reusing what the last run kept under `cache_dir` (dense candidate
    lists, BM25's lengths and question-term columns; one directory per strategy). `version` names
    what the query and chunk vectors depend on (the embedding_version)."""
    query_vectors, query_texts = queries.vectors, queries.texts
    specs, bases = plan(retrievers)
    masks = access_masks(index, queries.groups)
    askers = [None] * len(query_texts) if queries.groups is None else queries.groups
    depth = max(settings.depth, settings.candidate_k)
    tokens = query_tokens(index, bases, query_texts)
    base = {}
    for name in bases:
        if not RANKERS[parse_retriever(name).ranker].lexical:
            path = as_path(cache_dir) / f"{name}.arrow"
            base[name] = cached_dense_hits(
                index, name, query_vectors, query_texts, depth, path, version, masks, askers
            )
        else:
            contextual = parse_retriever(name).contextual
            path = as_path(cache_dir) / f"{name}.terms.arrow"
            index.use_bm25(contextual, question_bm25(index, contextual, tokens, path))
            base[name] = base_hits(index, name, query_vectors, tokens, depth, masks)
    return assemble(index, specs, base, queries.ids, query_texts, settings, reranker)


@dataclass
class Candidates:
    """Chunks scored (`chunk_id:text hash`) and, per question key, the best ones, their scores and
    whether the list holds every chunk its asker may read (then nothing outside it can rank above)."""

    scored: pd.Index
    lists: dict[str, tuple[np.ndarray, np.ndarray]]
    complete: set[str]


KEEP = 2  # lists keep KEEP x depth chunks: a question is searched again only when over half its list went


def cached_dense_hits(
    index: ChunkIndex,
    name: str,
    query_vectors: np.ndarray,
    query_texts: list[str],
    depth: int,
    path: Path,
    version: str,
    masks: list[Mask] | None = None,
    askers: list[tuple[str, ...] | None] | None = None,
) -> list[Hits]:
    """Each question's top `depth` readable chunks by cosine, from the lists kept at `path` and the
    new chunks. A list is kept per question text and asker's groups and holds readable chunks
    only: unreadable chunks do not exist for it (a chunk's groups never change under its id)."""
    contextual = parse_retriever(name).contextual
    vectors = dense_vectors(index, contextual)
    hashes = index.text_hashes(contextual)
    members = pd.Index([f"{c}:{h}" for c, h in zip(index.chunks["chunk_id"].tolist(), hashes)], dtype=object)
    keep = KEEP * depth
    stamp = cache_stamp(name, version, keep)
    kept = load_candidates(path, stamp)
    new = np.flatnonzero(~members.isin(kept.scored)) if kept is not None else np.arange(len(members))
    masks = masks or [None] * len(query_texts)
    askers = askers or [None] * len(query_texts)
    questions = [text_hash(json.dumps([g, q], ensure_ascii=False)) for g, q in zip(askers, query_texts)]
    found: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    whole: set[int] = set()  # questions whose list holds every chunk they may read
    merge: list[tuple[int, np.ndarray, np.ndarray, bool]] = []
    for qi, key in enumerate(questions):
        if kept is not None and key in kept.lists:
            ids, scores = kept.lists[key]
            at = members.get_indexer(ids)
            alive = at >= 0
            complete = key in kept.complete
            if complete or alive.sum() >= depth:
                merge.append((qi, at[alive], scores[alive], complete))
    if merge:
        fresh = dense_scores(vectors[new], query_vectors[[qi for qi, *_ in merge]])
        for row, (qi, at, scores, complete) in enumerate(merge):
            readable = np.ones(len(new), bool) if masks[qi] is None else masks[qi][new]
            candidates = np.concatenate([at, new[readable]])
            joined = np.concatenate([scores, fresh[row][readable]])
            order = best(joined, len(candidates), index.tiebreak[candidates])
            if not complete:
                # a chunk left out of the kept list ranks below every survivor of it: the ranking
                # is known down to the last survivor
                order = order[: np.flatnonzero(order < len(at))[-1] + 1]
            elif len(candidates) <= keep:
                whole.add(qi)
            found[qi] = (candidates[order[:keep]], joined[order[:keep]])
    again = [qi for qi in range(len(questions)) if qi not in found]
    if again:
        ranked = top_k(vectors, query_vectors[again], keep, index.tiebreak, [masks[qi] for qi in again])
        found |= {qi: hit for qi, hit in zip(again, ranked)}
        whole |= {qi for qi in again if (len(members) if masks[qi] is None else masks[qi].sum()) <= keep}
    lists = {questions[qi]: (members[p].to_numpy(), s) for qi, (p, s) in found.items()}
    save_candidates(path, stamp, Candidates(members, lists, {questions[qi] for qi in whole}))
    return [
        list(zip(found[qi][0][:depth].tolist(), found[qi][1][:depth].tolist()))
        for qi in range(len(questions))
    ]


def cache_stamp(name: str, version: str, keep: int) -> str:
    """What kept lists depend on besides the chunks and question texts they are keyed by: the
    vectors' version, and the code that ranks and keeps them."""
    code = fingerprint([cached_dense_hits])
    return json.dumps({"retriever": name, "version": version, "keep": keep, "code": code}, sort_keys=True)


def load_candidates(path: AnyPath, stamp: str) -> Candidates | None:
    """The kept lists, or None when there are none or they were made with other inputs."""
    if not path.exists():
        return None
    table = read_arrow(path)
    if (table.schema.metadata or {}).get(b"stamp", b"").decode() != stamp:
        return None
    frame = table.to_pandas()
    scored = frame["question"].isna()
    lists = {
        q: (group["chunk"].to_numpy(), group["score"].to_numpy(np.float32))
        for q, group in frame[~scored].groupby("question", sort=False)
    }
    complete = set(frame.loc[~scored & frame["complete"].astype(bool), "question"])
    return Candidates(pd.Index(frame.loc[scored, "chunk"], dtype=object), lists, complete)


def save_candidates(path: Path, stamp: str, kept: Candidates) -> None:
    questions = [q for q, (ids, _) in kept.lists.items() for _ in ids]
    chunks = [kept.scored.to_numpy(), *(ids for ids, _ in kept.lists.values())]
    scores = [np.full(len(kept.scored), np.nan, np.float32), *(s for _, s in kept.lists.values())]
    table = pa.table(
        {
            "question": pa.array([None] * len(kept.scored) + questions, pa.string()),
            "chunk": pa.array(np.concatenate(chunks).astype(str), pa.string()),
            "score": pa.array(np.concatenate(scores).astype(np.float32)),
            "complete": pa.array([False] * len(kept.scored) + [q in kept.complete for q in questions]),
        }
    )
    write_arrow(table.replace_schema_metadata({"stamp": stamp}), path)  # rewritten every run
