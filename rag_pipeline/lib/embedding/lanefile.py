"""A lane's embeddings: a directory of `BUCKETS` Parquet files, the chunks of a note always in one.

An edit of a note rewrites its bucket alone; the other files keep their bytes. Each bucket is
written from the vector store a row group at a time, so memory holds one group, never the lane,
and its vectors' problems are kept in its footer, so a bucket left as it was still reports them.
Retrieval and the index read through `LaneVectors`, in the order of the chunks file, and read
only the row groups holding the rows they ask for. pandas reads the directory as one table
(`pd.read_parquet(directory)`), DuckDB as `read_parquet('<directory>/*.parquet')`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rag_pipeline.lib.core import (
    AnyPath,
    as_path,
    note_buckets,
    parquet_file,
    vector_column,
    vector_matrix,
    write_batches,
)
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.embedding.embedders import vector_problems
from rag_pipeline.lib.embedding.vectorstore import VectorStore

BUCKETS = 32  # files per lane: a one-note edit rewrites about 1/32 of the lane
ROW_GROUP = 4096  # rows per group: a group of 384-dim plain and contextual vectors is about 12 MB
PREFETCH_BYTES = 128 << 20  # vectors read from the store at once, for as many buckets as fit
PROBLEMS = b"vector_problems"  # footer key: the problems of the bucket's vectors, as a JSON list
ROWS = b"rows_sha256"  # footer key: a digest of the bucket's chunk_id and text hash columns


class LaneMismatch(ValueError):
    """The lane's files hold other chunks than the ones asked for."""


def rows_digest(columns: dict[str, list[str]]) -> str:
    """What a bucket holds (its chunk_id and text hash columns, in order), as one digest: a bucket
    is left alone when its footer has the digest of the rows it must hold (no column is read)."""
    digest = hashlib.sha256()
    for name in sorted(columns):
        digest.update(f"{name}\x1d{len(columns[name])}\x1d".encode())
        digest.update("\x1e".join(columns[name]).encode())
    return digest.hexdigest()


def bucket_paths(directory: AnyPath) -> list[AnyPath]:
    return [directory / f"bucket-{b:02d}.parquet" for b in range(BUCKETS)]


class LaneVectors:
    """The vectors of one column (`vector` or `vector_ctx`) of opened Parquet files, indexed like a
    (rows, dim) float32 array: `lane[positions]`, `lane[start:stop]`, `len(lane)`. `rows` maps a
    position to a row of the files taken one after another (default: the same row)."""

    def __init__(
        self,
        files: Sequence[pq.ParquetFile | AnyPath],
        column: str,
        dim: int,
        rows: np.ndarray | None = None,
    ):
        # kept open: the groups read are those of the files checked, even if a later run replaces them
        files = [f if isinstance(f, pq.ParquetFile) else parquet_file(f) for f in files]
        self.column, self.dim, self.rows = column, dim, rows
        self.groups = [(f, g) for f in files for g in range(f.num_row_groups)]
        sizes = [f.metadata.row_group(g).num_rows for f, g in self.groups]
        self.starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        self.groups_read = 0

    def __len__(self) -> int:
        return len(self.rows) if self.rows is not None else int(self.starts[-1])

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.dim)

    def __getitem__(self, rows: slice | np.ndarray | list[int]) -> np.ndarray:
        positions = np.arange(len(self))[rows] if isinstance(rows, slice) else np.asarray(rows)
        if positions.dtype == bool:
            positions = np.flatnonzero(positions)
        positions = positions.astype(np.int64)
        out = np.empty((len(positions), self.dim), np.float32)
        if not len(positions):
            return out
        if positions.min() < 0 or positions.max() >= len(self):
            raise IndexError(f"{self.column}: row out of range 0..{len(self) - 1}")
        stored = self.rows[positions] if self.rows is not None else positions
        group = np.searchsorted(self.starts, stored, side="right") - 1
        for g in np.unique(group):
            at = np.flatnonzero(group == g)
            file, index = self.groups[g]
            matrix = vector_matrix(file.read_row_group(index, columns=[self.column]).column(0), self.dim)
            self.groups_read += 1
            out[at] = matrix[stored[at] - self.starts[g]]
        return out

    def blocks(self):
        """(positions, vectors) a row group at a time, in the files' order: a full scan reads each
        group once (positions in chunk order would read every bucket's groups for each block)."""
        inverse = None
        if self.rows is not None:
            inverse = np.full(int(self.starts[-1]), -1, np.int64)
            inverse[self.rows] = np.arange(len(self.rows))
        for g, (file, index) in enumerate(self.groups):
            lo, hi = int(self.starts[g]), int(self.starts[g + 1])
            positions = np.arange(lo, hi) if inverse is None else inverse[lo:hi]
            matrix = vector_matrix(file.read_row_group(index, columns=[self.column]).column(0), self.dim)
            self.groups_read += 1
            keep = positions >= 0  # rows no position asks for (none, after read_lane's check)
            yield positions[keep], matrix[keep]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)


def read_lane(
    directory: AnyPath, dim: int, chunk_ids: list[str], contextual: bool
) -> tuple[LaneVectors, LaneVectors | None]:
    """The lane's plain vectors (and contextual ones, when asked for and built) in the order of
    `chunk_ids`. FileNotFoundError when a bucket is missing, LaneMismatch when the files hold other
    chunks."""
    paths = bucket_paths(as_path(directory))
    if missing := [p for p in paths if not p.exists()]:
        raise FileNotFoundError(f"{missing[0]} is missing ({len(missing)} of {BUCKETS} buckets)")
    files = [parquet_file(p) for p in paths]
    stored = pd.Index(
        [c for f in files for c in f.read(columns=["chunk_id"]).column(0).to_pylist()], dtype=object
    )
    rows = stored.get_indexer(chunk_ids) if stored.is_unique else np.array([-1])
    if len(stored) != len(chunk_ids) or (rows < 0).any():
        raise LaneMismatch(f"{directory} holds other chunks")
    plain = LaneVectors(files, "vector", dim, rows)
    built = contextual and "vector_ctx" in files[0].schema_arrow.names
    return plain, LaneVectors(files, "vector_ctx", dim, rows) if built else None


HASHES = {"vector": "text_hash", "vector_ctx": "text_hash_ctx"}  # each vector column's hashes


@dataclass
class _Bucket:
    path: AnyPath
    rows: np.ndarray  # its rows' positions in the lane
    columns: dict[str, list[str]]  # chunk_id, text_hash (and text_hash_ctx) of those rows
    held: pq.ParquetFile | None  # the file as it is, when readable and of this embedding_version
    old: dict[str, list[str]]  # the hashes of each vector column the file holds
    kept: list[str] | None  # the file's recorded problems, when it already holds exactly these rows


class LaneWriter:
    """A lane's embeddings directory, planned then written: per bucket, the rows of its notes in
    the order given, with `chunk_id`, `text_hash`, `vector` (and `text_hash_ctx`, `vector_ctx`
    when `ctx_hashes` are given). A bucket already holding its rows is left alone; one written
    again takes the vectors its file already holds from there and the rest from the store."""

    def __init__(
        self,
        directory: AnyPath,
        chunk_ids: list[str],
        notes: list[str],
        hashes: list[str],
        ctx_hashes: list[str] | None,
        embedding_version: str,
        dim: int,
    ):
        self.directory, self.dim, self.n = as_path(directory), dim, len(chunk_ids)
        vector = pa.list_(pa.float32(), dim)
        fields = [("chunk_id", pa.string()), ("text_hash", pa.string()), ("vector", vector)]
        if ctx_hashes is not None:
            fields += [("text_hash_ctx", pa.string()), ("vector_ctx", vector)]
        # the vectors' version and the code that writes the buckets: a bucket of another is written again
        code = fingerprint([LaneWriter])
        metadata = {"embedding_version": embedding_version, "dim": str(dim), "code": code}
        self.schema = pa.schema(fields, metadata=metadata)
        bucket = note_buckets(notes, BUCKETS)
        self.buckets = []
        for b, path in enumerate(bucket_paths(self.directory)):
            rows = np.flatnonzero(bucket == b)
            columns = {"chunk_id": [chunk_ids[i] for i in rows], "text_hash": [hashes[i] for i in rows]}
            if ctx_hashes is not None:
                columns["text_hash_ctx"] = [ctx_hashes[i] for i in rows]
            self.buckets.append(self._plan(path, rows, columns))

    def _plan(self, path: AnyPath, rows: np.ndarray, columns: dict[str, list[str]]) -> _Bucket:
        held = None
        try:
            if path.exists():
                held = parquet_file(path)
                metadata = held.schema_arrow.metadata or {}
                if any(metadata.get(k) != self.schema.metadata[k] for k in (b"embedding_version", b"code")):
                    held = None
        except (OSError, pa.ArrowException):
            held = None  # unreadable: written again
        if held is None:
            return _Bucket(path, rows, columns, None, {}, None)
        footer, names = held.metadata.metadata or {}, held.schema_arrow.names
        if names == self.schema.names and footer.get(ROWS) == rows_digest(columns).encode():
            return _Bucket(path, rows, columns, held, {}, json.loads(footer.get(PROBLEMS, b"[]")))
        stored = held.read(columns=[h for h in HASHES.values() if h in names])
        return _Bucket(
            path,
            rows,
            columns,
            held,
            {v: stored.column(h).to_pylist() for v, h in HASHES.items() if h in names},
            None,
        )

    def _lacking(self, bucket: _Bucket):
        """(position in `hashes + ctx_hashes`, hash) of each vector a bucket to write lacks in its file."""
        for offset, (vector, hashes) in enumerate(HASHES.items()):
            if hashes in bucket.columns:
                have = set(bucket.old.get(vector, ()))
                for i, h in zip(bucket.rows, bucket.columns[hashes]):
                    if h not in have:
                        yield self.n * offset + int(i), h

    def needed(self) -> list[int]:
        """Positions in `hashes + ctx_hashes` of the vectors a bucket to write lacks: the store must
        hold them before `write`."""
        return sorted(p for b in self.buckets if b.kept is None for p, _ in self._lacking(b))

    def write(self, store: VectorStore) -> tuple[list[str], int]:
        """Write the buckets that changed. Returns the vectors' problems (`vector_problems`, naming
        the bucket and rows, kept buckets' included) and the number of buckets written.

        The store is read for several buckets at once, up to PREFETCH_BYTES of vectors: a bucket's
        rows are spread over the whole lane, so reading it alone would read nearly every row group
        the lane's vectors are in."""
        if self.directory.is_file():  # the one-file layout of earlier versions
            self.directory.unlink()
        todo = [b for b in self.buckets if b.kept is None]
        limit, batch, hashes = max(1, PREFETCH_BYTES // (4 * self.dim)), [], []
        for i, bucket in enumerate(todo):
            batch.append(bucket)
            hashes += [h for _, h in self._lacking(bucket)]
            if len(hashes) >= limit or i == len(todo) - 1:
                unique = list(dict.fromkeys(hashes))
                fetched = (pd.Index(unique, dtype=object), store.vectors(unique))
                for b in batch:
                    b.kept = self._write(b, fetched)
                batch, hashes = [], []
        return [p for b in self.buckets for p in b.kept], len(todo)

    def _write(self, bucket: _Bucket, fetched: tuple[pd.Index, np.ndarray]) -> list[str]:
        problems: list[str] = []
        held: dict[str, tuple[pd.Index, np.ndarray]] = {}  # column -> (its hashes, once, and their rows)
        for column, hashes in bucket.old.items():
            if not hashes:
                continue
            index = pd.Index(hashes, dtype=object)
            first = ~index.duplicated()
            held[column] = (index[first], np.flatnonzero(first))
        read: dict[str, np.ndarray] = {}  # the old file's vectors, read on first use

        def vectors(column: str, start: int) -> pa.FixedSizeListArray:
            hashes = bucket.columns[HASHES[column]][start : start + ROW_GROUP]
            matrix = np.empty((len(hashes), self.dim), np.float32)
            found = np.full(len(hashes), -1)
            if column in held:
                index, rows = held[column]
                at = index.get_indexer(hashes)
                found = np.where(at >= 0, rows[at], -1)
                if (found >= 0).any():
                    if column not in read:
                        read[column] = vector_matrix(bucket.held.read(columns=[column]).column(0), self.dim)
                    matrix[found >= 0] = read[column][found[found >= 0]]
            if len(missing := np.flatnonzero(found < 0)):
                index, stored = fetched
                matrix[missing] = stored[index.get_indexer([hashes[i] for i in missing])]
            rows = f"{bucket.path.name} rows {start}-{start + len(matrix) - 1}"
            problems.extend(f"{column} {rows}: {p}" for p in vector_problems(matrix, self.dim))
            return vector_column(matrix)

        def groups():
            for start in range(0, max(len(bucket.rows), 1), ROW_GROUP):
                part = [
                    vectors(name, start)
                    if name in HASHES
                    else bucket.columns[name][start : start + ROW_GROUP]
                    for name in self.schema.names
                ]
                yield pa.table(part, schema=self.schema)

        digest = rows_digest(bucket.columns)
        footer = lambda: {PROBLEMS: json.dumps(problems), ROWS: digest}  # noqa: E731 - known once every group is checked
        write_batches(groups(), self.schema, bucket.path, footer=footer, **VectorStore.write_options)
        return problems
