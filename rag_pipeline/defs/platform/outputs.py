"""What an asset leaves behind (files, LanceDB tables and their tags), recorded in its
materialization so that a deleted or damaged output makes the asset stale."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from rag_pipeline.lib.core import location, parquet_file
from rag_pipeline.lib.release import CURRENT, RELEASE_DIR, verify_release
from rag_pipeline.lib.serving import DB_DIR, LanceStore, duplicate_chunk_ids


def outputs(
    *paths: object,
    tables: Sequence[tuple[object, str, int]] = (),
    tags: Sequence[tuple[object, str, str, int]] = (),
) -> list[dict[str, object]]:
    """The outputs an asset leaves behind (files; LanceDB tables as (db dir, name, version); tags of
    table versions as (db dir, name, tag, version)), recorded so that a deleted or damaged one makes
    the asset stale."""
    entries = [{"path": str(p)} for p in paths]
    entries += [{"db": str(db), "table": name, "version": version} for db, name, version in tables]
    entries += [{"db": str(db), "table": name, "tag": tag, "version": v} for db, name, tag, v in tags]
    for entry in entries:  # the LanceDB files as their writer, which checked them, left them
        if (files := lance_files(entry)) is not None:
            entry["files"] = files
    return entries


def fingerprint(*roots: Path, skip: str | None = None) -> str:
    """The name, size and modification time of every file under the local `roots` but those in a
    folder named `skip`, as one digest."""
    digest = hashlib.sha256()
    for root in roots:
        walked = sorted(os.walk(root)) if os.path.isdir(root) else [(os.path.dirname(root), [], [root])]
        depth = len(Path(root).parts)
        for folder, _, names in walked:
            if skip is not None and skip in Path(folder).parts[depth:]:
                continue
            for name in sorted(names):
                path = os.path.join(folder, name)
                stat = os.stat(path) if os.path.exists(path) else None
                found = f"{stat.st_size}\x1f{stat.st_mtime_ns}" if stat else "missing"
                digest.update(f"{path}\x1f{found}\x1e".encode())
    return digest.hexdigest()


def lance_files(entry: dict) -> str | None:
    """The fingerprint of the files a LanceDB check of `entry` reads (its table, or for the live
    release every served table and `current.json`), or None when it opens no table or the table is in
    an object store (checked as a string: a `Path` would fold `s3://` into `s3:/`)."""
    if "://" in str(entry.get("db", entry.get("path"))):
        return None
    if "table" in entry:
        # a table's tags (the release's) are read by the check of a tag only
        return fingerprint(
            Path(entry["db"]) / f"{entry['table']}.lance", skip=None if "tag" in entry else "_refs"
        )
    path = Path(str(entry["path"]))
    if path.name == CURRENT and path.parent.name == RELEASE_DIR:
        return fingerprint(path.parent.parent / DB_DIR, path)
    return None


def damaged(recorded: object, every: bool = True) -> str | None:
    """Why one of the recorded outputs is missing or unreadable, or None when all are whole. Unless
    `every`, a LanceDB entry whose files are byte for byte as their writer left them (`outputs`
    records that: same names, sizes, times) is not opened (importing and opening LanceDB takes
    seconds): the writer checked them."""
    for entry in recorded or []:
        files = None if every else lance_files(entry)
        if (files is None or files != entry.get("files")) and (problem := damaged_entry(entry)):
            return problem
    return None


def damaged_entry(entry: dict) -> str | None:
    """Why one recorded output is missing or unreadable, or None."""
    if "table" in entry:
        try:
            table = LanceStore(location(entry["db"])).open(entry["table"])
            version = table.version
            table.count_rows()
        except Exception as exc:  # LanceDB raises several types for a missing or broken table
            return (
                f"LanceDB table {entry['table']} in {entry['db']} cannot be read ({exc.__class__.__name__})"
            )
        if "tag" in entry:
            tagged = table.tagged(entry["tag"])
            if tagged != entry["version"]:
                return f"LanceDB table {entry['table']}: tag {entry['tag']!r} is on {tagged}, not {entry['version']}"
            return None
        if version != entry["version"]:
            return f"LanceDB table {entry['table']} is at version {version}, not {entry['version']}"
        if duplicate_chunk_ids(table):
            return f"LanceDB table {entry['table']} holds a chunk_id twice"
        return None
    path = location(entry["path"])
    if not path.exists():
        return f"{path} is missing"
    live = path.name == CURRENT and path.parent.name == RELEASE_DIR  # the record of what is live
    if live and (reason := verify_release(path.parent.parent)):
        return reason
    if str(path).endswith(".parquet"):
        try:
            parquet_file(path).metadata  # noqa: B018 - reading the footer is the check
        except (OSError, pa.ArrowException) as exc:
            return f"{path} cannot be read ({exc})"
    return None


def elsewhere(recorded: object, root: str) -> str | None:
    """Why the data directory `root` holds none of the recorded outputs (another data directory
    made them), or None."""
    places = [str(e.get("path", e.get("db"))) for e in recorded or []]
    return (
        f"{root} holds none of its outputs"
        if places and not any(p.startswith(root) for p in places)
        else None
    )
