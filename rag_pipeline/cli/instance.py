"""`python -m rag_pipeline.instance`: the Dagster instance of `DAGSTER_HOME` (default `make run`'s),
its storage made once, under a lock, before anything else opens it.

Dagster makes an instance's sqlite storage (its tables and their alembic stamp) in whichever process
opens it first; two doing so at once can stamp it twice, and every later open fails (`Version table
'alembic_version' has more than one head present`). So `make run` and `make dev` (the Makefile, when
it writes `dagster.yaml`), every command that opens the instance and the tests make it here first;
once made, opening it at once from many processes is safe. An instance that cannot be opened is
named in one line with the command that sets its storage aside (`InstanceError`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dagster as dg
from alembic.util.exc import CommandError
from sqlalchemy.exc import SQLAlchemyError

from rag_pipeline.lib.core import DirectoryLock, clipped, shown_path
from rag_pipeline.settings import DEFAULT_DAGSTER_HOME

LOCK = ".rag-instance.lock"
STORAGE = ("history", "schedules")  # what Dagster's default sqlite storage keeps under the home


class InstanceError(RuntimeError):
    """The instance's storage cannot be opened; the message says how to set it aside."""


def home() -> Path:
    """`DAGSTER_HOME`, set to `make run`'s when unset (as the Makefile exports it)."""
    return Path(os.environ.setdefault("DAGSTER_HOME", str(DEFAULT_DAGSTER_HOME)))


def own_storage(where: Path) -> bool:
    """Whether the instance's `dagster.yaml` names a storage of its own (Postgres, say)."""
    config = where / "dagster.yaml"
    return config.exists() and "storage" in config.read_text()


def damaged(where: Path, exc: Exception) -> str:
    """The line that names a damaged instance and how to start it afresh, or the storage its
    `dagster.yaml` names that cannot be opened."""
    shown = shown_path(where)
    if own_storage(where):
        return (
            f"the Dagster instance in {shown} cannot open the storage its dagster.yaml names "
            f"({clipped(exc, 160)}); is that database running (`make services` starts the project's)?"
        )
    aside = " && ".join(f"mv {shown}/{part} {shown}/{part}.damaged" for part in STORAGE)
    return (
        f"the Dagster instance in {shown} cannot be opened, its storage is damaged ({clipped(exc, 160)}); "
        f"set it aside and run again: {aside} (the run history starts afresh: the next run goes through "
        "every step, reusing the vectors and outputs the data directory holds)"
    )


def make(where: Path | None = None) -> None:
    """Make the instance's storage under `where` (default `home()`), if it is not made yet, under a
    lock that every process of this machine takes for it; InstanceError when it is damaged."""
    where = where or home()
    where.mkdir(parents=True, exist_ok=True)
    lock = DirectoryLock(where / LOCK, "instance set-up")
    lock.acquire()
    try:
        with dg.DagsterInstance.from_config(str(where)) as instance:
            instance.get_runs(limit=1)  # the run storage; the event log's and the schedules' are made too
    except Exception as exc:
        # alembic's stamp, sqlite's tables; a database of its own raises its client's errors too
        # (dagster_postgres', installed with the celery extra only)
        if not isinstance(exc, (CommandError, SQLAlchemyError)) and not own_storage(where):
            raise
        raise InstanceError(damaged(where, exc)) from exc
    finally:
        lock.release()


def main() -> int:
    try:
        make()
    except InstanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
