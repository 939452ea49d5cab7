"""Content-addressed vector store: (embedding_version, hash of the exact text embedded) -> vector.

Each flush is a new immutable Parquet segment written atomically, so a run killed
half-way keeps every flushed vector and the next run embeds only the rest.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rag_pipeline.lib.embedders import Embedder, EmbeddingError, Kind
from rag_pipeline.lib.storage import vector_column, vector_matrix, write_bytes, write_table

Progress = Callable[[int, int], None]


def version_key(embedding_version: str) -> str:
    """A short folder name for an embedding_version (the full string is kept in version.json)."""
    return hashlib.sha256(embedding_version.encode()).hexdigest()[:16]


def text_hash(embedded_text: str) -> str:
    return hashlib.sha256(embedded_text.encode()).hexdigest()[:32]


class VectorStore:
    MAX_SEGMENTS = 32

    def __init__(self, root: Path, embedding_version: str, dim: int):
        self.embedding_version = embedding_version
        self.dim = dim
        self.dir = Path(root) / version_key(embedding_version)
        self._vectors: dict[str, np.ndarray] | None = None
        manifest = self.dir / "version.json"
        if not manifest.exists():
            body = {"embedding_version": embedding_version, "dim": dim}
            write_bytes(json.dumps(body, indent=1).encode(), manifest)

    def _segments(self) -> list[Path]:
        return sorted(self.dir.glob("segment-*.parquet"))

    def _load(self) -> dict[str, np.ndarray]:
        if self._vectors is None:
            self._vectors = {}
            for path in self._segments():
                table = pq.read_table(path)
                matrix = vector_matrix(table.column("vector"), self.dim)
                self._vectors.update(zip(table.column("text_hash").to_pylist(), matrix))
        return self._vectors

    def __len__(self) -> int:
        return len(self._load())

    def get(self, hashes: list[str]) -> dict[str, np.ndarray]:
        stored = self._load()
        return {h: stored[h] for h in hashes if h in stored}

    def put(self, hashes: list[str], vectors: np.ndarray) -> None:
        if not hashes:
            return
        table = pa.table({"text_hash": hashes, "vector": vector_column(vectors)})
        write_table(table, self.dir / f"segment-{time.time_ns()}.parquet")
        self._load().update(zip(hashes, np.asarray(vectors, dtype=np.float32)))
        if len(self._segments()) > self.MAX_SEGMENTS:
            self.compact()

    def compact(self) -> None:
        """Fold every segment into one; the new one lands before the old ones go."""
        old = self._segments()
        stored = self._load()
        hashes = list(stored)
        matrix = np.stack([stored[h] for h in hashes]) if hashes else np.zeros((0, self.dim), np.float32)
        write_table(
            pa.table({"text_hash": hashes, "vector": vector_column(matrix)}),
            self.dir / f"segment-{time.time_ns()}.parquet",
        )
        for path in old:
            path.unlink()


def embed_cached(
    embedder: Embedder,
    store: VectorStore,
    texts: list[str],
    kind: Kind,
    *,
    labels: list[str] | None = None,
    batch_size: int = 16,
    flush_every: int = 256,
    progress: Progress | None = None,
) -> tuple[np.ndarray, list[str], int]:
    """Vectors for `texts`, embedding only texts the store lacks.

    Checked vectors are flushed to the store every `flush_every` texts, so an interrupted run
    keeps them. `labels` (e.g. chunk ids) name the text an embedding error is about.
    Returns (vectors, text hashes, number of texts sent to the embedder).
    """
    prefix = embedder.prefix(kind)
    hashes = [text_hash(prefix + t) for t in texts]
    have = store.get(hashes)
    todo: dict[str, int] = {}
    for i, h in enumerate(hashes):
        if h not in have and h not in todo:
            todo[h] = i
    missing = list(todo)
    pending: dict[str, np.ndarray] = {}
    embedded = [0]

    def done(start: int, vectors: np.ndarray) -> None:
        batch = missing[start : start + len(vectors)]
        pending.update(zip(batch, vectors))
        have.update(zip(batch, vectors))
        embedded[0] += len(batch)
        if len(pending) >= flush_every:
            flush()
        if progress:
            progress(embedded[0], len(missing))

    def flush() -> None:
        if pending:
            store.put(list(pending), np.stack(list(pending.values())))
            pending.clear()

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
    matrix = np.stack([have[h] for h in hashes]) if hashes else np.zeros((0, embedder.dim), np.float32)
    return matrix, hashes, len(missing)
