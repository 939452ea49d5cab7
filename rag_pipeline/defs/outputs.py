"""What an asset leaves behind (files, LanceDB tables and their tags), recorded in its
materialization so that a deleted or damaged output makes the asset stale."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from rag_pipeline.lib.core import location, parquet_file
from rag_pipeline.lib.release import CURRENT, RELEASE_DIR, verify_release
from rag_pipeline.lib.serving import open_table


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
    return entries


def damaged(recorded: object) -> str | None:
    """Why one of the recorded outputs is missing or unreadable, or None when all are whole."""
    for entry in recorded or []:
        if "table" in entry:
            try:
                table = open_table(location(entry["db"]), entry["table"])
                version = table.version
                table.count_rows()
            except Exception as exc:  # LanceDB raises several types for a missing or broken table
                return f"LanceDB table {entry['table']} in {entry['db']} cannot be read ({exc.__class__.__name__})"
            if "tag" in entry:
                tagged = table.tags.list().get(entry["tag"], {}).get("version")
                if tagged != entry["version"]:
                    return f"LanceDB table {entry['table']}: tag {entry['tag']!r} is on {tagged}, not {entry['version']}"
                continue
            if version != entry["version"]:
                return f"LanceDB table {entry['table']} is at version {version}, not {entry['version']}"
            ids = table.search().select(["chunk_id"]).limit(None).to_arrow()["chunk_id"]
            if pc.count_distinct(ids).as_py() != len(ids):
                return f"LanceDB table {entry['table']} holds a chunk_id twice"
            continue
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
