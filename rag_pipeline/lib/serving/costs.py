"""What each configuration costs per question, measured as an application asking it pays: the query
embedded on its own (timed once per embedder and question, `embedding_times`; its characters and the
CPU-seconds this process spent on it), the strategy's
served table searched with the asker's groups as a pre-filter (as `serving_eval` searches it: through
the table's index when it has one), BM25 over the strategy's chunks, then the configuration's fusion,
reranker call (its `rerank_k` passages, counted and timed) and merge into parents (`ranked_hits`, the
retrieval stage's own code). A configuration's latency for a question is the sum of the stages it
runs; its p50 and p95 are over the questions, one search each, after one untimed search that loads
the table.

The served tables hold the plain vectors: a `+ctx` dense input is timed on the strategy's served
table (as many rows and dimensions as its contextual vectors would have)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_pipeline.lib.core import AnyPath, read_frame, readable_mask, text_hash, write_frame
from rag_pipeline.lib.retrieval import (
    RANKERS,
    ChunkIndex,
    HttpReranker,
    RetrievalSettings,
    base_hits,
    parent_spans,
    parse_retriever,
    ranked_hits,
)
from rag_pipeline.lib.serving.search import search
from rag_pipeline.lib.serving.store import DEFAULT_ANN, AnnConfig, ServedTable

# per configuration: the latency percentiles, and what one question consumes on average
COST_COLUMNS = [
    "strategy",
    "retriever",
    "n_questions",
    "latency_p50_ms",
    "latency_p95_ms",
    "embed_chars",  # query characters embedded (0: the configuration embeds no query)
    "embed_cpu_s",  # CPU-seconds this process spent embedding it (an in-process model's cost)
    "rerank_calls",
    "rerank_chars",  # the query and the passages sent to the reranker
]


@dataclass(frozen=True)
class Asked:
    """One question as every strategy is asked it: its query vector, and its embedding's time."""

    text: str
    groups: list[str] | None
    vector: np.ndarray
    embed_ms: float
    embed_cpu_s: float


def embedding_times(
    path: AnyPath, version: str, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]
) -> list[tuple[float, float]]:
    """Each query's embedding time as `ask` pays it, (milliseconds, CPU-seconds): embedded on its own
    and timed once per embedder (`version`) and text, then kept in `path`, so that a build sends an
    embedding server no query it has timed before (as the vectors, which the vector store keeps)."""
    keys = [text_hash(t) for t in texts]
    kept = (
        read_frame(path)
        if path.exists()
        else pd.DataFrame(columns=["embedding_version", "key", "ms", "cpu_s"])
    )
    mine = kept[kept["embedding_version"] == version].set_index("key")
    times = {k: (float(r.ms), float(r.cpu_s)) for k, r in mine.iterrows()}
    new = {}
    for key, text in zip(keys, texts):
        if key not in times and key not in new:
            started, cpu = time.perf_counter(), time.process_time()
            embed([text])
            new[key] = ((time.perf_counter() - started) * 1000, time.process_time() - cpu)
    if new:
        rows = pd.DataFrame([(version, k, ms, cpu) for k, (ms, cpu) in new.items()], columns=kept.columns)
        write_frame(pd.concat([kept, rows], ignore_index=True) if len(kept) else rows, path)
    times |= new
    return [times[k] for k in keys]


class Metered:
    """A reranker that counts its calls and the characters sent."""

    def __init__(self, reranker: HttpReranker | None):
        self.reranker, self.calls, self.chars = reranker, 0, 0

    def scores(self, query: str, texts: list[str]) -> list[float]:
        if self.reranker is None:  # `ranked_hits` names the missing reranker
            raise ValueError("no reranker configured (set the retrieval resource's rerank_url)")
        self.calls += 1
        self.chars += len(query) + sum(map(len, texts))
        return self.reranker.scores(query, texts)


def configuration_costs(
    table: ServedTable,
    index: ChunkIndex,
    strategy: str,
    retrievers: Sequence[str],
    asked: Sequence[Asked],
    settings: RetrievalSettings,
    reranker: HttpReranker | None = None,
    ann: AnnConfig = DEFAULT_ANN,
) -> pd.DataFrame:
    """Per configuration of `strategy` (`retrievers`, as the report names them): `COST_COLUMNS`."""
    specs = [parse_retriever(r) for r in retrievers]
    bases = list(dict.fromkeys(i for s in specs for i in s.inputs))
    position = {cid: p for p, cid in enumerate(index.chunks["chunk_id"].tolist())}
    access = index.chunks["access"].tolist() if "access" in index.chunks else [[]] * len(index.chunks)
    parents = parent_spans(index.chunks, specs)
    metered = Metered(reranker)
    if asked:  # the first search loads the table into the store's cache: untimed
        search(table, asked[0].vector, 1, asked[0].groups, ann=ann)
    latency: dict[str, list[float]] = {s.name: [] for s in specs}
    reranked: dict[str, list[int]] = {s.name: [] for s in specs}
    masks: dict[tuple[str, ...], np.ndarray] = {}
    for question in asked:
        who = None if question.groups is None else tuple(question.groups)
        if who is not None and who not in masks:
            masks[who] = readable_mask(access, who)
        mask = None if who is None else masks[who]
        found, took = {}, {}
        for name in bases:
            started = time.perf_counter()
            found[name] = _base(table, index, name, question, mask, position, settings.candidate_k, ann)
            took[name] = (time.perf_counter() - started) * 1000
        for spec in specs:
            chars, started = metered.chars, time.perf_counter()
            ranked_hits(index, spec, found, question.text, settings, metered, parents)
            own = (time.perf_counter() - started) * 1000
            embedding = question.embed_ms if spec.uses_embedder else 0.0
            latency[spec.name].append(own + embedding + sum(took[i] for i in spec.inputs))
            reranked[spec.name].append(metered.chars - chars)
    rows = []
    for spec in specs:
        times, chars = np.asarray(latency[spec.name]), np.asarray(reranked[spec.name], dtype=float)
        uses = spec.uses_embedder and len(asked) > 0
        rows.append(
            {
                "strategy": strategy,
                "retriever": spec.name,
                "n_questions": len(asked),
                "latency_p50_ms": float(np.percentile(times, 50)) if len(times) else float("nan"),
                "latency_p95_ms": float(np.percentile(times, 95)) if len(times) else float("nan"),
                "embed_chars": float(np.mean([len(q.text) for q in asked])) if uses else 0.0,
                "embed_cpu_s": float(np.mean([q.embed_cpu_s for q in asked])) if uses else 0.0,
                "rerank_calls": 1.0 if spec.rerank and len(asked) else 0.0,
                "rerank_chars": float(chars.mean()) if len(chars) else 0.0,
            }
        )
    return pd.DataFrame(rows, columns=COST_COLUMNS)


def _base(
    table: ServedTable,
    index: ChunkIndex,
    name: str,
    question: Asked,
    mask: np.ndarray | None,
    position: dict[str, int],
    k: int,
    ann: AnnConfig,
) -> list[tuple[int, float]]:
    """One base retriever's hits for one question: BM25 over the chunks, or the served table's search."""
    if RANKERS[parse_retriever(name).ranker].lexical:
        tokens = [index.analyzer.tokens(question.text)]
        return base_hits(index, name, question.vector[None, :], tokens, k, None if mask is None else [mask])[
            0
        ]
    (hits,) = search(table, question.vector, k, question.groups, ann=ann)
    unknown = set(hits.chunk_ids) - position.keys()
    if unknown:
        raise ValueError(
            f"table {table.name} serves chunks the strategy has not ({sorted(unknown)[:3]}): sync it"
        )
    return [(position[c], 1.0 - d) for c, d in zip(hits.chunk_ids, hits.distances)]
