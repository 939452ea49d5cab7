"""Atomic Parquet and file writes: a reader sees the old file or the new one, never half of one.

The data directory is a local path or an object-store URL (`s3://bucket/prefix`): a local one is a
`pathlib.Path`, a remote one a `Location` with the few `Path` methods the pipeline uses. Locally a
file is written beside its target and renamed over it; on an object store one upload already
publishes the whole object at once, so it goes straight to its key.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq


def _endpoint() -> str:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""


def _region() -> str:
    return os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"


class StorageError(OSError):
    """The object store could not be reached or refused the request; the message names the settings."""


def _gone(where: Location) -> bool:
    """Whether the object is missing (as far as the store can still be asked)."""
    try:
        return where.fs.get_file_info(where.key).type == pafs.FileType.NotFound
    except OSError:
        return False


@contextmanager
def object_store(where: AnyPath) -> Iterator[None]:
    """pyarrow's S3 errors as one line naming the object and the AWS_* variables that decide where
    and as whom it is read. A missing object is a FileNotFoundError, as a missing local file is,
    also when a request after the first finds it gone (deleted after it was listed or opened:
    pyarrow then words it NO_SUCH_KEY, or fails to read the error into a short range's buffer).
    For a local path, errors pass unchanged."""
    try:
        yield
    except (FileNotFoundError, StorageError):
        raise
    except OSError as exc:
        if not isinstance(where, Location):
            raise
        if _gone(where):
            raise FileNotFoundError(errno.ENOENT, "no such object", str(where)) from exc
        via = f"endpoint {_endpoint()}" if _endpoint() else "AWS S3 itself (no AWS_ENDPOINT_URL)"
        keys = "set" if os.environ.get("AWS_ACCESS_KEY_ID") else "not set"
        raise StorageError(
            f"{where}: object store error via {via}, region {_region()}, AWS_ACCESS_KEY_ID {keys}: "
            f"{' '.join(str(exc).split())}; check AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3), "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        ) from exc


def s3_filesystem() -> pafs.S3FileSystem:
    """S3 with the standard AWS_* variables: keys, region and an endpoint for S3-compatible stores."""
    endpoint = urlparse(_endpoint())
    options = {"region": _region()}
    if endpoint.netloc:
        options |= {"endpoint_override": endpoint.netloc, "scheme": endpoint.scheme or "https"}
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        options |= {
            "access_key": os.environ["AWS_ACCESS_KEY_ID"],
            "secret_key": os.environ.get("AWS_SECRET_ACCESS_KEY", ""),
        }
    return pafs.S3FileSystem(**options)


def storage_options(path: str | AnyPath) -> dict[str, str] | None:
    """For a `Location`, the same settings in the form LanceDB's object store takes."""
    if not isinstance(path, Location):
        return None
    options = {"aws_region": _region()}
    names = {"AWS_ACCESS_KEY_ID": "aws_access_key_id", "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key"}
    options |= {key: os.environ[var] for var, key in names.items() if os.environ.get(var)}
    if _endpoint():
        options |= {"aws_endpoint": _endpoint(), "allow_http": str(_endpoint().startswith("http:")).lower()}
    return options


@dataclass(frozen=True, order=True)
class Location:
    """An object on an object store, or a prefix of objects, named like a path: `bucket/key`."""

    key: str
    fs: pafs.FileSystem = field(compare=False, repr=False)
    scheme: str = field(default="s3", compare=False)

    def __truediv__(self, part: str) -> Location:
        return Location(f"{self.key.rstrip('/')}/{part}", self.fs, self.scheme)

    def joinpath(self, *parts: str) -> Location:
        location = self
        for part in parts:
            location = location / part
        return location

    def __str__(self) -> str:
        return f"{self.scheme}://{self.key}"

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> Location:
        return Location(self.key.rsplit("/", 1)[0], self.fs, self.scheme)

    def exists(self) -> bool:
        with object_store(self):
            return self.fs.get_file_info(self.key).type != pafs.FileType.NotFound

    def is_file(self) -> bool:
        with object_store(self):
            return self.fs.get_file_info(self.key).type == pafs.FileType.File

    def size(self) -> int:
        with object_store(self):
            return self.fs.get_file_info(self.key).size

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Object stores have no directories: a prefix exists once an object is under it."""

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            with object_store(self):
                self.fs.delete_file(self.key)
        except FileNotFoundError:  # deleted meanwhile by another process, maybe on another machine
            if not missing_ok:
                raise

    def files(self, pattern: str = "*", recursive: bool = False) -> list[Location]:
        """The objects under this prefix whose name matches `pattern`, sorted."""
        with object_store(self):
            infos = self.fs.get_file_info(
                pafs.FileSelector(self.key, allow_not_found=True, recursive=recursive)
            )
        return sorted(
            Location(i.path, self.fs, self.scheme)
            for i in infos
            if i.type == pafs.FileType.File and fnmatch.fnmatchcase(i.base_name, pattern)
        )

    def glob(self, pattern: str) -> list[Location]:
        return self.files(pattern)

    def read_bytes(self) -> bytes:
        with object_store(self), self.fs.open_input_stream(self.key) as stream:
            return stream.read()

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)


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
    path = Path(path)
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


def write_frame(frame: pd.DataFrame, path: str | AnyPath, row_group_size: int | None = None) -> None:
    write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=row_group_size)


def write_bytes(data: bytes, path: str | AnyPath) -> None:
    _atomic(as_path(path), lambda out: Path(out).write_bytes(data))


def table_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


def publish_directory(path: AnyPath, files: dict[str, bytes], keep: tuple[str, ...] = ()) -> None:
    """Make `files` the content of directory `path` all at once, or not at all.

    They are written to a fresh sibling directory and `path`, a symbolic link, is switched to it in
    one rename: a reader sees the previous set or the new one, never a mix. The previous set is
    removed afterwards; the files named in `keep` (written by another publisher) are carried over.
    An object store has no such rename: there each file is replaced on its own, whole, so a reader
    may see new files beside old ones while the set is being written (and `keep` files stay)."""
    if isinstance(path, Location):
        for name, data in files.items():
            write_bytes(data, path / name)
        return
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
