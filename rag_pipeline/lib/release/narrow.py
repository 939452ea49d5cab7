"""Narrowing live at once: the notes a source commit restricts or deletes, compared with what the
live release serves, written to `release/revoked.json` (`rag_pipeline.lib.serving.revoked`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

import pyarrow.compute as pc

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.release.directory import ReleaseError, read_current
from rag_pipeline.lib.serving import (
    RELEASE_DIR,
    MissingTable,
    MissingVersion,
    Revocation,
    live_version,
    merged,
    narrowed,
    read_revocation,
    served_store,
    write_revocation,
)

SEP = "\x1f"  # joins a row's groups into one value: group names hold no control characters


def served_versions(data_dir: AnyPath) -> tuple[str, dict[str, set[int]]]:
    """A key of the live release (its commit and table versions; empty when nothing was released)
    and every table version an application may be reading: the one `current.json` names and the
    one tagged `live`, which lags behind it after a release that died half-way."""
    try:
        current = read_current(data_dir / RELEASE_DIR)
    except ReleaseError:  # damaged: `ask` refuses it, while `open_live` still follows the tags
        current = None
    versions = {name: {v} for name, v in (current or {}).get("table_versions", {}).items()}
    store = served_store(data_dir)
    for name in store.names():  # a table of a strategy no longer released keeps its tag
        if (tagged := live_version(store.open(name))) is not None:
            versions.setdefault(name, set()).add(tagged)
    key = json.dumps([current["commit"], current["table_versions"]], sort_keys=True) if current else ""
    return key, versions


def served_access(data_dir: AnyPath, versions: Mapping[str, set[int]]) -> dict[str, set[tuple[str, ...]]]:
    """Per note in those table versions, each access list its rows carry."""
    served: dict[str, set[tuple[str, ...]]] = {}
    store = served_store(data_dir)
    for name, numbers in versions.items():
        try:
            table = store.open(name)
        except MissingTable:  # it serves nothing
            continue
        for version in numbers:
            try:
                table.checkout(version)
            except MissingVersion:
                continue
            rows = table.read(["note", "access"])
            pairs = rows.append_column("key", pc.binary_join(rows["access"], SEP)).drop_columns(["access"])
            distinct = pairs.group_by(["note", "key"]).aggregate([])
            for note, key in zip(distinct["note"].to_pylist(), distinct["key"].to_pylist()):
                served.setdefault(note, set()).add(tuple(key.split(SEP)) if key else ())
    return served


def narrow_live(
    data_dir: AnyPath, access: Mapping[str, Sequence[str] | None], commit: str
) -> tuple[Revocation, bool]:
    """Withhold from the live release, at once, every note the notes `access` (note -> groups, None
    where they cannot be read, at source commit `commit`) delete or restrict against what it serves, on top of what is withheld
    from it already (a release replaces the live release, and with it what was withheld). Returns
    the record and whether it changed (it is written only then)."""
    live, versions = served_versions(data_dir)
    old = read_revocation(data_dir)
    kept = old.notes if old.live == live else {}
    notes = merged(kept, narrowed(served_access(data_dir, versions), access))
    if notes == old.notes and (old.live == live or not notes):
        return old, False
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    added = notes != kept  # a merge only adds or narrows
    record = Revocation(notes, live, commit if added else old.commit, now if added else old.time)
    write_revocation(data_dir, record)
    return record, True
