"""The live version of a served table: the LanceDB tag `live` on the version the last release
passed. Applications read that version; syncs go on writing new ones beside it, and the cleanup
that follows a sync never reaches back to a live version. The record of a release is
`release/current.json` (`rag_pipeline.lib.release`): the tags are moved after it is written, so
between a run that died there and the next run a tag may still be on the previous release."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from rag_pipeline.lib.core import AnyPath, location
from rag_pipeline.lib.serving.revoked import LiveTable
from rag_pipeline.lib.serving.search import open_table

if TYPE_CHECKING:  # lancedb takes seconds to import: loaded where a table is opened
    import lancedb

LIVE = "live"
DB_DIR = "lancedb"  # the served tables' directory under the data directory


def table_key(strategy: str) -> str:
    """The served table of a strategy: `fixed-1000` is served as `fixed_1000`."""
    return strategy.replace("-", "_")


def live_version(table: lancedb.table.Table) -> int | None:
    tag = table.tags.list().get(LIVE)
    return None if tag is None else int(tag["version"])


def tag_live(table: lancedb.table.Table, version: int) -> None:
    """Move the `live` tag to `version` (the tag is a pointer: no data is written)."""
    if live_version(table) is None:
        try:
            table.tags.create(LIVE, version)
            return
        except RuntimeError:  # LanceDB's "tag live already exists": a release elsewhere made it meanwhile
            if live_version(table) is None:
                raise
    table.tags.update(LIVE, version)


def cleanup_age(table: lancedb.table.Table, retain: timedelta) -> timedelta:
    """The `cleanup_older_than` that removes versions older than `retain` but none as recent as the
    live one: LanceDB refuses a cleanup that would reach a tagged version."""
    live = live_version(table)
    if live is None:
        return retain
    stamps = {v["version"]: v["timestamp"] for v in table.list_versions()}
    if live not in stamps:
        return retain
    stamp = stamps[live]
    now = datetime.now(stamp.tzinfo)  # LanceDB's stamps are local time, as `now` is
    return max(retain, now - stamp + timedelta(minutes=1))


class NotReleased(LookupError):
    """No release has tagged the table `live` yet."""


def open_live(data_dir: str | AnyPath, strategy: str) -> LiveTable:
    """The strategy's served table checked out at its `live` version, for applications: search it
    with `search_rows`, which leaves out the notes a narrowing since the release withholds."""
    root = location(data_dir) if isinstance(data_dir, str) else data_dir  # a string may be s3://
    db_dir = root / DB_DIR
    try:
        table = open_table(db_dir, table_key(strategy))
    except ValueError:  # LanceDB's "table not found"
        raise NotReleased(f"{db_dir}: no served table {table_key(strategy)!r}") from None
    version = live_version(table)
    if version is None:
        raise NotReleased(f"{db_dir}/{table_key(strategy)}.lance: no version is tagged {LIVE!r} yet")
    table.checkout(version)
    return LiveTable(table, root)
