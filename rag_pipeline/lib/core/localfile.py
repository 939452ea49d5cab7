"""A local file written whole or not at all: beside its target, then renamed over it. A full disk
on the way is one line naming the file and what to do, and leaves nothing behind."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


class DiskFullError(OSError):
    """The disk filled up while an output was written; nothing of it was left behind."""


@contextmanager
def disk_space(path: Path) -> Iterator[None]:
    """A full disk while writing `path` as one line naming it and what to do; the caller has
    removed what it wrote, so the line can say nothing was half-written."""
    try:
        yield
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        free = shutil.disk_usage(path.parent).free if path.parent.exists() else 0
        full = DiskFullError(
            f"{path}: no space left on the device ({free / 1e6:.1f} MB free), nothing was half-written; "
            "free space on that disk, or set RAG_DATA_DIR to a directory on a disk with room"
        )
        full.errno = errno.ENOSPC
        raise full from None


def write_local(path: Path, write: Callable[[str], None]) -> None:
    """`write(tmp)` fills a temporary file beside `path`, which then replaces `path` in one rename."""
    with disk_space(path):
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
