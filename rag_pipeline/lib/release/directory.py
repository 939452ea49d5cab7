"""The release directory: `current.json` (the live release), `questions.parquet` (its per-question
results, the next decision's point of comparison) and `history.parquet` (every decision, appended).
Each file is replaced whole and atomically; `current.json` and `questions.parquet` change only on a
release. `current.json` is the one record of what is live: the tables' `live` tags follow it."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, read_frame, write_bytes, write_table
from rag_pipeline.lib.release.gate import RELEASED

CURRENT, HISTORY, QUESTIONS = "current.json", "history.parquet", "questions.parquet"
AGAIN = "run `make run` to release again"
# current.json's keys and the JSON types of their values
CURRENT_TYPES: dict[str, tuple[type, ...]] = {
    "decision": (str,),
    "commit": (str,),
    "run": (str,),
    "k": (int,),
    "recall": (int, float),
    "embedding_version": (str,),
    "table_versions": (dict,),
    "questions_sha256": (str,),
    "previous_commit": (str, type(None)),
    "time": (str,),
}
CURRENT_KEYS = tuple(CURRENT_TYPES)
# a key a release written before it lacks: the split its recall is on (`test`, or `dev` when too few
# test questions could decide)
RECALL_ON = "recall_on"
HISTORY_SCHEMA = pa.schema(
    [
        ("decision", pa.string()),
        ("commit", pa.string()),
        ("run", pa.string()),
        ("recall", pa.float64()),
        (RECALL_ON, pa.string()),
        ("reasons", pa.list_(pa.string())),
        ("newly_missed", pa.list_(pa.string())),
        ("time", pa.string()),
    ]
)


class ReleaseError(ValueError):
    """`current.json` cannot say what is live; the message names the file and what to do."""


def read_current(release_dir: AnyPath) -> dict | None:
    """The live release as `current.json` records it; None when nothing was released yet. A file
    that is not JSON, lacks a key or holds a value of another type, or is missing while the
    history records a release, raises `ReleaseError`."""
    path = release_dir / CURRENT
    if not path.exists():
        if (read_history(release_dir)["decision"] == RELEASED).any():
            raise ReleaseError(
                f"{path} is missing, though {release_dir / HISTORY} records a release; {AGAIN}"
            )
        return None
    try:
        current = json.loads(path.read_bytes())
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise ReleaseError(f"{path} is not valid JSON ({exc}); {AGAIN}") from None
    if not isinstance(current, dict):
        raise ReleaseError(f"{path} is not a JSON object; {AGAIN}")
    if missing := [k for k in CURRENT_KEYS if k not in current]:
        raise ReleaseError(f"{path} lacks {', '.join(missing)}; {AGAIN}")
    wrong = [k for k, types in CURRENT_TYPES.items() if not _typed(current[k], types)]
    versions = current["table_versions"]
    if not wrong and not all(_typed(v, (int,)) for v in versions.values()):
        wrong = ["table_versions"]
    if wrong:
        raise ReleaseError(f"{path}: the value of {', '.join(wrong)} has the wrong type; {AGAIN}")
    return current


def _typed(value: object, types: tuple[type, ...]) -> bool:
    return isinstance(value, types) and not isinstance(value, bool)  # JSON's true is no number


def read_released_questions(release_dir: AnyPath) -> pd.DataFrame | None:
    path = release_dir / QUESTIONS
    return read_frame(path) if path.exists() else None


def read_history(release_dir: AnyPath) -> pd.DataFrame:
    path = release_dir / HISTORY
    return read_frame(path) if path.exists() else HISTORY_SCHEMA.empty_table().to_pandas()


def append_history(release_dir: AnyPath, row: dict) -> AnyPath:
    """`history.parquet` with `row` appended (written whole, atomically: decisions are few)."""
    old = read_history(release_dir)
    new = pd.DataFrame([{name: row[name] for name in HISTORY_SCHEMA.names}])
    frame = pd.concat([old, new], ignore_index=True) if len(old) else new
    path = release_dir / HISTORY
    write_table(pa.Table.from_pandas(frame, schema=HISTORY_SCHEMA, preserve_index=False), path)
    return path


def write_release(release_dir: AnyPath, current: dict, results: pd.DataFrame) -> None:
    """The new live release: its per-question results first, then `current.json`, which names it;
    writing `current.json` (atomically) is the moment the release happens."""
    write_table(pa.Table.from_pandas(results, preserve_index=False), release_dir / QUESTIONS)
    kept = [*CURRENT_KEYS, *([RECALL_ON] if RECALL_ON in current else [])]
    write_bytes(json.dumps({k: current[k] for k in kept}, indent=1).encode(), release_dir / CURRENT)
