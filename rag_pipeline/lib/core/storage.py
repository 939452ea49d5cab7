"""Atomic Parquet and file writes: a reader sees the old file or the new one, never half of one.

The data directory is a local path or an object-store URL (`s3://bucket/prefix`): a local one is a
`pathlib.Path`, a remote one a `Location` (objectstore.py). Locally a file is written beside its
target and renamed over it; on an object store an upload publishes the whole object at once.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from rag_pipeline.lib.core.localfile import write_local
from rag_pipeline.lib.core.objectstore import (  # noqa: F401  (the storage API names them too)
    Location,
    StorageError,
    object_store,
    s3_filesystem,
    storage_options,
)

AnyPath = Path | Location


def location(root: str) -> AnyPath:
    """`root` as a local path or, for an `s3://` URL, a `Location`."""
    if root.startswith("s3://"):
        return Location(root.removeprefix("s3://").rstrip("/"), s3_filesystem())
    if "://" in root:
        raise ValueError(f"{root}: only local paths and s3:// URLs are supported")
    return Path(root).expanduser().resolve()


def as_path(path: str | AnyPath) -> AnyPath:
    return path if isinstance(path, Location) else Path(path)


def shown_path(path: str | AnyPath) -> str:
    """A local path as a user types it here: relative to the working directory when inside it (an
    object store's, as it is)."""
    if isinstance(path, Location) or "://" in str(path):
        return str(path)
    path = Path(path).absolute()
    return path.relative_to(Path.cwd()).as_posix() if path.is_relative_to(Path.cwd()) else str(path)


def file_size(path: AnyPath) -> int:
    return path.size() if isinstance(path, Location) else path.stat().st_size


def tree_bytes(path: AnyPath) -> int:
    """The size of every file under directory `path`."""
    if isinstance(path, Location):
        return sum(f.size() for f in path.files(recursive=True))
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def read_table(path: AnyPath, **options) -> pa.Table:
    """`options` go to `pq.read_table` (columns, ...)."""
    if isinstance(path, Location):
        with object_store(path):
            return pq.read_table(path.key, filesystem=path.fs, **options)
    return pq.read_table(path, **options)


def read_frame(path: AnyPath, **options) -> pd.DataFrame:
    return read_table(path, **options).to_pandas()


def parquet_file(path: AnyPath, **options) -> pq.ParquetFile:
    if isinstance(path, Location):
        with object_store(path):
            return pq.ParquetFile(path.fs.open_input_file(path.key), **options)
    return pq.ParquetFile(path, **options)


def _atomic(path: AnyPath, write) -> None:
    if isinstance(path, Location):
        # the object appears when its upload completes, and closing an upload completes it even
        # after a failed write: the object is written to a local file first, then uploaded whole
        with tempfile.TemporaryDirectory(prefix="rag-upload-") as scratch:
            local = Path(scratch) / path.name
            write(str(local))
            with object_store(path):
                pafs.copy_files(str(local), path.key, pafs.LocalFileSystem(), path.fs, use_threads=False)
        return
    write_local(Path(path), write)


def write_table(table: pa.Table, path: str | AnyPath, **options) -> None:
    """`options` go to `pq.write_table` (default compression: zstd)."""
    options = {"compression": "zstd"} | options
    _atomic(as_path(path), lambda out: pq.write_table(table, out, **options))


def write_batches(
    tables: Iterable[pa.Table],
    schema: pa.Schema,
    path: str | AnyPath,
    row_group_size: int | None = None,
    footer: Callable[[], dict[bytes, str]] | None = None,
    **options,
) -> None:
    """`tables` one after another as one Parquet file, atomically, each its own row group(s), one at
    a time; then `footer()`'s key-value metadata. `options` go to `pq.ParquetWriter` (zstd default)."""
    options = {"compression": "zstd"} | options

    def write(out) -> None:
        with pq.ParquetWriter(out, schema, **options) as writer:
            for table in tables:
                writer.write_table(table, row_group_size=row_group_size)
            if footer is not None:
                writer.add_key_value_metadata(footer())

    _atomic(as_path(path), write)


def regrouped(tables, rows: int):
    """`tables` concatenated into tables of at least `rows` rows (the last may be shorter)."""
    pending: list[pa.Table] = []
    size = 0
    for table in tables:
        pending.append(table)
        size += table.num_rows
        if size >= rows:
            yield pa.concat_tables(pending)
            pending, size = [], 0
    if pending:
        yield pa.concat_tables(pending)


def write_frame(
    frame: pd.DataFrame, path: str | AnyPath, row_group_size: int | None = None, metadata: dict | None = None
) -> None:
    """`frame` as Parquet, with `metadata` as its schema's (a report carries what it was computed from)."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if metadata is not None:
        table = table.replace_schema_metadata(metadata)
    write_table(table, path, row_group_size=row_group_size)


def write_bytes(data: bytes, path: str | AnyPath) -> None:
    _atomic(as_path(path), lambda out: Path(out).write_bytes(data))


def table_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()
