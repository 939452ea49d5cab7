"""Publishing a directory as a set: a reader sees the previous set or the new one, and only the
files the publisher wrote are replaced or removed, never a user's."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from rag_pipeline.lib.core.storage import AnyPath, Location, write_bytes

OWNED = ".rag-pipeline-owned.json"  # in a published directory: the names its publisher wrote


def publish_directory(path: AnyPath, files: dict[str, bytes]) -> None:
    """Make `files` the published part of directory `path` all at once, or not at all. Only what
    the publisher owns is replaced: the files it wrote last time (listed in `path/OWNED`) and not
    now are removed, and every other entry (a user's file, another publisher's) is left as it is.

    The set is written to a fresh sibling directory, the other entries are copied into it, and
    `path`, a symbolic link, is switched to it in one rename: a reader sees the previous set or the
    new one, never a mix. A plain directory (made by a user, or from before reports were published
    as a set) is moved aside in the same way and removed once its entries are in the new one. An
    object store has no such rename: there each file is replaced on its own, whole, then the files
    no longer published are deleted, so a reader may see new files beside old ones meanwhile."""
    owned = _owned(path)
    listing = json.dumps(sorted(files)).encode()
    if isinstance(path, Location):
        for name, data in [*files.items(), (OWNED, listing)]:
            write_bytes(data, path / name)
        for name in owned - files.keys():
            (path / name).unlink(missing_ok=True)
        return
    mine = owned | files.keys() | {OWNED}  # the names that are not carried over
    path.parent.mkdir(parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}-"))
    old = None
    try:
        for name, data in [*files.items(), (OWNED, listing)]:
            (target / name).write_bytes(data)
        _carry(path, target, mine)
        os.chmod(target, 0o755)  # mkdtemp's 0700 would hide the reports from other readers
        link = path.parent / f".{path.name}.link-{os.getpid()}"
        link.unlink(missing_ok=True)
        os.symlink(target.name, link)
        if path.is_symlink():
            old = path.resolve()
        elif path.is_dir():
            old = path.parent / f".{path.name}.aside-{os.getpid()}"
            os.replace(path, old)
        os.replace(link, path)
    except BaseException:
        if old is not None and not os.path.lexists(path):  # a plain directory set aside goes back
            os.replace(old, path)
        shutil.rmtree(target, ignore_errors=True)
        raise
    if old is not None and old != target.resolve():
        _carry(old, target, mine)  # what was added while the set was being written
        shutil.rmtree(old, ignore_errors=True)


def _owned(path: AnyPath) -> set[str]:
    """The names the last publish of `path` wrote; none when it left no readable list."""
    try:
        names = json.loads((path / OWNED).read_bytes())
    except (OSError, ValueError):
        return set()
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def _carry(source: Path, target: Path, skip: set[str]) -> None:
    """Copy every entry of directory `source` not named in `skip` and not yet in `target` into it."""
    if not source.is_dir():
        return
    for entry in source.iterdir():
        if entry.name in skip or (target / entry.name).exists() or (target / entry.name).is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, target / entry.name, follow_symlinks=False)
