"""What is live: the table versions `current.json` names. The order of a release is: its per-question
results, then `current.json` (the commit point), then each table's `live` tag. A run that dies between
the last two leaves tags behind `current.json`; readers go by `current.json`, and the next `release`
moves the tags (`verify_release` is why the asset is stale until it has)."""

from __future__ import annotations

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.release.directory import AGAIN, CURRENT, ReleaseError, read_current
from rag_pipeline.lib.serving import (
    DB_DIR,
    RELEASE_DIR,
    MissingTable,
    MissingVersion,
    ServedTable,
    live_version,
    served_store,
    tag_live,
)


def released_table(data_dir: AnyPath, current: dict, name: str) -> ServedTable:
    """Served table `name` checked out at the version `current` (read from `current.json`) names;
    `ReleaseError` when the table or that version does not exist."""
    where, version = data_dir / RELEASE_DIR / CURRENT, current["table_versions"][name]
    try:
        table = served_store(data_dir).open(name)
    except MissingTable:
        raise ReleaseError(
            f"{where} names table {name}, which {data_dir / DB_DIR} does not hold; {AGAIN}"
        ) from None
    try:
        table.checkout(version)
    except MissingVersion:
        raise ReleaseError(f"{where} names {name} version {version}, which does not exist; {AGAIN}") from None
    return table


def live_tables(data_dir: AnyPath, current: dict | None) -> dict[str, ServedTable]:
    """Every table `current` names, checked out at its version (see `released_table`)."""
    return {
        name: released_table(data_dir, current, name) for name in (current or {}).get("table_versions", {})
    }


def checked_current(data_dir: AnyPath) -> dict | None:
    """`current.json` (see `read_current`), every table version it names checked to exist."""
    current = read_current(data_dir / RELEASE_DIR)
    live_tables(data_dir, current)
    return current


def verify_release(data_dir: AnyPath) -> str | None:
    """Why the live release is damaged or half made, or None: `current.json` unreadable (see
    `read_current`), naming a table version that does not exist, or a table whose `live` tag is not
    on the version it names (a release that died before it moved every tag)."""
    try:
        current = read_current(data_dir / RELEASE_DIR)
        tables = live_tables(data_dir, current)
    except ReleaseError as exc:
        return str(exc)
    for name, table in tables.items():
        tagged, version = live_version(table), current["table_versions"][name]
        if tagged != version:
            return (
                f"table {name}: tag 'live' is on version {tagged}, {data_dir / RELEASE_DIR / CURRENT} names "
                f"{version} (a release stopped before it moved every tag)"
            )
    return None


def follow_release(data_dir: AnyPath, current: dict) -> list[str]:
    """Move each `live` tag that is not on the version `current` names to it; the tables moved."""
    moved = []
    for name, table in live_tables(data_dir, current).items():
        if live_version(table) != current["table_versions"][name]:
            tag_live(table, current["table_versions"][name])
            moved.append(name)
    return moved
