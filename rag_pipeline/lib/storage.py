"""Atomic Parquet and file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def _atomic(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide outputs from other readers
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_table(table: pa.Table, path: Path, **options) -> None:
    """`options` go to `pq.write_table` (default compression: zstd)."""
    options = {"compression": "zstd"} | options
    _atomic(Path(path), lambda tmp: pq.write_table(table, tmp, **options))


def write_frame(frame: pd.DataFrame, path: Path) -> None:
    write_table(pa.Table.from_pandas(frame, preserve_index=False), path)


def write_bytes(data: bytes, path: Path) -> None:
    _atomic(Path(path), lambda tmp: Path(tmp).write_bytes(data))


def vector_column(vectors: np.ndarray) -> pa.FixedSizeListArray:
    """float32 matrix -> Parquet-friendly fixed-size list column."""
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])


def vector_matrix(column: pa.ChunkedArray | pa.Array, dim: int) -> np.ndarray:
    """Inverse of `vector_column`."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks else pa.array([], pa.list_(pa.float32(), dim))
    values = column.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.float32).reshape(-1, dim)


def table_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


def publish_directory(path: Path, files: dict[str, bytes], keep: tuple[str, ...] = ()) -> None:
    """Make `files` the content of directory `path` all at once, or not at all.

    They are written to a fresh sibling directory and `path`, a symbolic link, is switched to it in
    one rename: a reader sees the previous set or the new one, never a mix. The previous set is
    removed afterwards; the files named in `keep` (written by another publisher) are carried over."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}-"))
    try:
        for name, data in files.items():
            (target / name).write_bytes(data)
        for name in keep:
            if (path / name).exists() and name not in files:
                shutil.copy2(path / name, target / name)
        os.chmod(target, 0o755)  # mkdtemp's 0700 would hide the reports from other readers
        link = path.parent / f".{path.name}.link-{os.getpid()}"
        link.unlink(missing_ok=True)
        os.symlink(target.name, link)
        old = path.resolve() if path.is_symlink() else None
        if path.is_dir() and not path.is_symlink():  # a directory from before reports were published as a set
            shutil.rmtree(path)
        os.replace(link, path)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    if old is not None and old != target.resolve():
        shutil.rmtree(old, ignore_errors=True)
