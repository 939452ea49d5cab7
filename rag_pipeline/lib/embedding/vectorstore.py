"""Content-addressed vector store: (embedding_version, hash of the exact text embedded) -> vector;
the store's key is the embedding_version (the embedder's code among it) and the fingerprint of the
code that writes and reads the rows.

Vectors live in immutable Parquet segments (see segments.py): a run reads the vectors it asks
for, never the whole store, and each flush is a new segment, so a run killed half-way keeps
every flushed vector and the next run embeds only the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.chunking import contextual_text
from rag_pipeline.lib.core import (
    AnyPath,
    SegmentStore,
    text_hash,
    vector_column,
    vector_matrix,
    version_dir,
)
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.embedding.embedders import Embedder, EmbeddingError, Kind

Progress = Callable[[int, int], None]


class VectorStore(SegmentStore):
    # float vectors barely compress, and a flush (every 64 texts) should be cheap
    write_options = {"compression": "none", "use_dictionary": False, "write_statistics": False}

    def __init__(self, root: str | AnyPath, embedding_version: str, dim: int):
        self.embedding_version = embedding_version
        self.dim = dim
        manifest = {"embedding_version": embedding_version, "dim": dim}
        super().__init__(version_dir(root, self.key(embedding_version), manifest))

    @staticmethod
    def key(embedding_version: str) -> str:
        """The store's version: the vectors' embedding_version and the code that keeps a vector."""
        return f"{embedding_version}|rows@{fingerprint([VectorStore.vectors, VectorStore.put])[:12]}"

    def vectors(self, hashes: list[str]) -> np.ndarray:
        """One row per hash, in order; KeyError if one is not stored."""
        matrix = np.empty((len(hashes), self.dim), np.float32)
        for table, positions in self.read(hashes, ["vector"]):
            matrix[positions] = vector_matrix(table.column("vector"), self.dim)
        return matrix

    def get(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those hashes that are stored."""
        have = [h for h, found in zip(hashes, self.contains(hashes)) if found]
        return dict(zip(have, self.vectors(have)))

    def put(self, hashes: list[str], vectors: np.ndarray) -> None:
        if hashes:
            self.append(pa.table({"text_hash": hashes, "vector": vector_column(vectors)}))


def embed_cached(
    embedder: Embedder, store: VectorStore, texts: list[str], kind: Kind, **options
) -> tuple[np.ndarray, list[str], int]:
    """Vectors for `texts` (see `embed_missing`): (vectors, text hashes, texts sent to the embedder)."""
    hashes, embedded = embed_missing(embedder, store, texts, kind, **options)
    return store.vectors(hashes), hashes, embedded


def text_hashes(embedder: Embedder, texts: list[str], kind: Kind) -> list[str]:
    """What the store keys each text's vector by: the hash of the exact text embedded, prefix included."""
    prefix = embedder.prefix(kind)
    return [text_hash(prefix + t) for t in texts]


@dataclass(frozen=True)
class Passages:
    """What a lane embeds: each chunk's text, then (for `+ctx` retrievers) each with its context,
    built only for the positions asked for."""

    plain: list[str]
    headings: list[str]
    contextual: bool

    def __len__(self) -> int:
        return len(self.plain) * (2 if self.contextual else 1)

    def __getitem__(self, i: int) -> str:
        n = len(self.plain)
        return self.plain[i] if i < n else contextual_text(self.headings[i - n], self.plain[i - n])


def passage_hashes(model: Embedder, chunks: pd.DataFrame, texts: Passages) -> list[str]:
    """The vector store's key of each passage. Without a passage prefix it is the chunk's own text
    hash, kept in the chunks file; else the hash of the prefixed text."""
    columns = ["text_hash", "ctx_text_hash"][: 2 if texts.contextual else 1]
    if model.prefix("passage") == "" and all(c in chunks and chunks[c].notna().all() for c in columns):
        return [h for c in columns for h in chunks[c].tolist()]
    return text_hashes(model, [texts[i] for i in range(len(texts))], "passage")


def embed_missing(
    embedder: Embedder,
    store: VectorStore,
    texts: list[str],
    kind: Kind,
    *,
    labels: list[str] | None = None,
    batch_size: int = 16,
    flush_every: int = 64,
    flush_seconds: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    progress: Progress | None = None,
) -> tuple[list[str], int]:
    """Embed the texts the store lacks, so that it holds a vector for each of `texts`; memory
    holds the texts and a flush's vectors, never every vector.

    Checked vectors are flushed to the store every `flush_every` texts or `flush_seconds`,
    whichever comes first, so an interrupted run keeps them. `labels` (e.g. chunk ids) name
    the text an embedding error is about.
    Returns (text hashes, number of texts sent to the embedder).
    """
    hashes = text_hashes(embedder, texts, kind)
    stored = store.contains(hashes)
    todo: dict[str, int] = {}
    for i, (h, found) in enumerate(zip(hashes, stored)):
        if not found and h not in todo:
            todo[h] = i
    missing = list(todo)
    pending: list[tuple[list[str], np.ndarray]] = []
    state = {"embedded": 0, "pending": 0, "flushed_at": clock()}

    def flush() -> None:
        if pending:
            store.put([h for batch, _ in pending for h in batch], np.concatenate([v for _, v in pending]))
            pending.clear()
        state["pending"], state["flushed_at"] = 0, clock()

    def done(start: int, vectors: np.ndarray) -> None:
        batch = missing[start : start + len(vectors)]
        pending.append((batch, vectors))
        state["embedded"] += len(batch)
        state["pending"] += len(batch)
        if state["pending"] >= flush_every or clock() - state["flushed_at"] >= flush_seconds:
            flush()
        if progress:
            progress(state["embedded"], len(missing))

    try:
        embedder.embed_batches([texts[todo[h]] for h in missing], kind, batch_size, done)
    except EmbeddingError as exc:
        if exc.index is not None:
            position = todo[missing[exc.index]]
            name = labels[position] if labels else f"text #{position}"
            raise EmbeddingError(f"{name}: {exc}", index=position) from exc
        raise
    finally:
        flush()  # whatever was checked before a failure is kept
    return hashes, len(missing)
