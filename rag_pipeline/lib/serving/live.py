"""The live version of a served table: the tag `live` on the version the last release passed.
Applications read that version; syncs go on writing new ones beside it, and the cleanup that
follows a sync never reaches back to a live version. The record of a release is
`release/current.json` (`rag_pipeline.lib.release`): the tags are moved after it is written, so
between a run that died there and the next run a tag may still be on the previous release."""

from __future__ import annotations

from rag_pipeline.lib.core import AnyPath, location
from rag_pipeline.lib.serving.lance import LanceStore
from rag_pipeline.lib.serving.revoked import LiveTable
from rag_pipeline.lib.serving.store import DB_DIR, LIVE, MissingTable, ServedTable, Store


def served_store(data_dir: AnyPath) -> Store:
    """The store the data directory's served tables are in: LanceDB's, under `lancedb/`."""
    return LanceStore(data_dir / DB_DIR)


def table_key(strategy: str) -> str:
    """The served table of a strategy: `fixed-1000` is served as `fixed_1000`."""
    return strategy.replace("-", "_")


def live_version(table: ServedTable) -> int | None:
    return table.tagged(LIVE)


def tag_live(table: ServedTable, version: int) -> None:
    """Move the `live` tag to `version` (the tag is a pointer: no data is written)."""
    table.tag(LIVE, version)


class NotReleased(LookupError):
    """No release has tagged the table `live` yet."""


def open_live(data_dir: str | AnyPath, strategy: str) -> LiveTable:
    """The strategy's served table checked out at its `live` version, for applications: search it
    with `search_rows`, which leaves out the notes a narrowing since the release withholds."""
    root = location(data_dir) if isinstance(data_dir, str) else data_dir  # a string may be s3://
    db_dir = root / DB_DIR
    try:
        table = served_store(root).open(table_key(strategy))
    except MissingTable:
        raise NotReleased(f"{db_dir}: no served table {table_key(strategy)!r}") from None
    version = live_version(table)
    if version is None:
        raise NotReleased(f"{db_dir}/{table_key(strategy)}.lance: no version is tagged {LIVE!r} yet")
    table.checkout(version)
    return LiveTable(table, root)
