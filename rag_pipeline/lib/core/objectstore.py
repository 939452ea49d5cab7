"""An object store (`s3://bucket/prefix`) as the few `Path` methods the pipeline uses: `Location`;
pyarrow's S3 errors as one line that names the settings, and a missing object as a missing file."""

from __future__ import annotations

import errno
import fnmatch
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.fs as pafs


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
def object_store(where: Path | Location) -> Iterator[None]:
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
        raise refused(where, exc) from exc


def refused(where: Location, exc: Exception) -> StorageError:
    """The one line for an object store's error: the object, and the AWS_* settings used."""
    via = f"endpoint {_endpoint()}" if _endpoint() else "AWS S3 itself (no AWS_ENDPOINT_URL)"
    keys = "set" if os.environ.get("AWS_ACCESS_KEY_ID") else "not set"
    return StorageError(
        f"{where}: object store error via {via}, region {_region()}, AWS_ACCESS_KEY_ID {keys}: "
        f"{' '.join(str(exc).split())}; check AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3), "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    )


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


def s3_client():
    """boto3's S3 client with the same settings: for the conditional writes pyarrow's S3 filesystem
    does not offer (lease.py)."""
    import boto3
    from botocore.config import Config

    keys = os.environ.get("AWS_ACCESS_KEY_ID")
    return boto3.client(
        "s3",
        region_name=_region(),
        endpoint_url=_endpoint() or None,
        aws_access_key_id=keys or None,
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "") if keys else None,
        config=Config(connect_timeout=5, read_timeout=20, retries={"mode": "standard", "max_attempts": 3}),
    )


def storage_options(path: str | Path | Location) -> dict[str, str] | None:
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
