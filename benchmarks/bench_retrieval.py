"""Benchmark one strategy's retrieval and the vector store on generated notes (a script, not a test).

Times BM25 (tokenizing and from cached term counts), a cold and a one-note-edit
`retrieve_incremental` over every default retriever, and the vector store's put/get at ~90k
vectors, without Dagster. Vectors are random: only the costs are of interest here.

    .venv/bin/python benchmarks/bench_retrieval.py [--notes 2000] [--strategy fixed-200]
"""

import argparse
import random
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from bench_incremental import WORDS, note

from rag_pipeline.lib.chunking import STRATEGIES, chunk_note, stable_id
from rag_pipeline.lib.core import text_hash
from rag_pipeline.lib.embedding import HashingEmbedder, VectorStore, embed_cached
from rag_pipeline.lib.retrieval import (
    BM25,
    DEFAULT_RETRIEVERS,
    ChunkIndex,
    Queries,
    RetrievalSettings,
    TokenStore,
    make_analyzer,
    retrieve_incremental,
)
from rag_pipeline.lib.sources import clean_note

DIM = 512
RNG = np.random.default_rng(0)


def unit(n: int) -> np.ndarray:
    v = RNG.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def chunks_of(markdowns: list[str], strategy: str) -> pd.DataFrame:
    rows = []
    for i, markdown in enumerate(markdowns):
        cleaned = clean_note(markdown, f"Note {i}")
        rows += chunk_note(
            STRATEGIES[strategy],
            note=f"note-{i:05d}",
            source_version=stable_id(markdown),
            commit="c",
            cleaner_version="bench",
            text=cleaned.text,
            sections=cleaned.sections,
        )
    return pd.DataFrame(rows)


def timed(what: str, fn):
    """Wall and CPU seconds (CPU is the steadier figure on a shared machine)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    print(f"{what:58s} {time.perf_counter() - wall:8.3f} s wall {time.process_time() - cpu:8.3f} s CPU")
    return result


class Random(HashingEmbedder):
    """Random unit vectors: the store's costs without an embedder's."""

    def _embed(self, texts, kind):
        return RNG.standard_normal((len(texts), self.dim))


def bench_retrieval(root: Path, notes: int, strategy: str, in_memory: bool) -> None:
    rng = random.Random(0)
    markdowns = [note(rng, i, 1500) for i in range(notes)]
    chunks = chunks_of(markdowns, strategy)
    analyzer = make_analyzer("char")
    questions = [f"Note {i} の {WORDS[i % len(WORDS)]} は?" for i in range(0, notes, max(1, notes // 30))]
    tokens = [analyzer.tokens(q) for q in questions]
    print(f"{notes} notes, {strategy}: {len(chunks)} chunks, {len(questions)} questions")
    texts = chunks["text"].tolist()
    if in_memory:  # holds every token of the corpus at once: off by default, for the peak RSS
        bm25 = timed(
            "BM25 from tokens in memory (plain)", lambda: BM25.from_tokens(list(map(analyzer.tokens, texts)))
        )
        timed("  query all questions", lambda: bm25.search_many(tokens, 50))
    store = TokenStore(root / "tokens", analyzer)
    timed("BM25 via token store, cold: tokenize + write + build", lambda: store.bm25(texts))
    bm25 = timed(
        "BM25 via token store, cached counts: read + build",
        lambda: TokenStore(root / "tokens", analyzer).bm25(texts),
    )
    timed("  query all questions", lambda: bm25.search_many(tokens, 50))

    def run(frame: pd.DataFrame, vectors: np.ndarray, ctx: np.ndarray, query: np.ndarray) -> pd.DataFrame:
        index = ChunkIndex(
            frame, vectors, analyzer, ctx_vectors=ctx, token_store=TokenStore(root / "tokens", analyzer)
        )
        return retrieve_incremental(
            index, list(DEFAULT_RETRIEVERS), Queries([str(i) for i in range(len(questions))], query, questions),
            RetrievalSettings(), cache_dir=root / "candidates", version="bench",
        )  # fmt: skip

    vectors, ctx, query = unit(len(chunks)), unit(len(chunks)), unit(len(questions))
    timed("retrieve_incremental, every default retriever: cold", lambda: run(chunks, vectors, ctx, query))
    timed("retrieve_incremental: no change", lambda: run(chunks, vectors, ctx, query))
    markdowns[3] = markdowns[3].replace("。", "。追記しました。", 1)
    edited = chunks_of(markdowns, strategy)
    new = ~edited["chunk_id"].isin(chunks["chunk_id"])
    old_at = pd.Index(chunks["chunk_id"]).get_indexer(edited["chunk_id"])
    vectors2, ctx2 = vectors[np.maximum(old_at, 0)], ctx[np.maximum(old_at, 0)]
    vectors2[new.to_numpy()], ctx2[new.to_numpy()] = unit(int(new.sum())), unit(int(new.sum()))
    timed(
        f"retrieve_incremental: one-note edit ({int(new.sum())} new chunks)",
        lambda: run(edited, vectors2, ctx2, query),
    )


def bench_store(root: Path, total: int, flush: int) -> None:
    emb = Random(DIM)
    version = emb.embedding_version
    store = VectorStore(root / "vectors", version, DIM)
    hashes = [text_hash(str(i)) for i in range(total)]

    def put_all():
        for start in range(0, total, flush):
            store.put(hashes[start : start + flush], unit(len(hashes[start : start + flush])))

    timed(f"vector store: put {total} in flushes of {flush}", put_all)
    fresh = VectorStore(root / "vectors", version, DIM)
    timed("vector store: read 15000 vectors, index included", lambda: fresh.vectors(hashes[:15000]))
    timed("vector store: put 1", lambda: fresh.put([text_hash("one more")], unit(1)))
    # one strategy's texts in a store holding every strategy's: 31 edited, the rest stored
    texts = [str(i) for i in range(15000 - 31)] + [f"new {i}" for i in range(31)]
    again = VectorStore(root / "vectors", version, DIM)
    timed(
        f"embed_cached: 15000 texts, 31 new, store of {total}",
        lambda: embed_cached(emb, again, texts, "passage"),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--strategy", default="fixed-200")
    parser.add_argument("--vectors", type=int, default=90_000)
    parser.add_argument("--in-memory", action="store_true", help="also time BM25 built from tokens in memory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_retrieval(Path(tmp), args.notes, args.strategy, args.in_memory)
        bench_store(Path(tmp), args.vectors, 64)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")


if __name__ == "__main__":
    main()
