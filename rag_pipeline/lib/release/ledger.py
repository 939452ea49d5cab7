"""The release directory: `current.json` (the live release), `questions.parquet` (its per-question
results, the next decision's point of comparison) and `history.parquet` (every decision, appended).
Each file is replaced whole and atomically; `current.json` and `questions.parquet` change only on a
release."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, read_frame, write_bytes, write_table

RELEASE_DIR = "release"  # under the data directory
CURRENT, HISTORY, QUESTIONS = "current.json", "history.parquet", "questions.parquet"
CURRENT_KEYS = (
    "decision",
    "commit",
    "run",
    "k",
    "recall",
    "embedding_version",
    "table_versions",
    "questions_sha256",
    "previous_commit",
    "time",
)
HISTORY_SCHEMA = pa.schema(
    [
        ("decision", pa.string()),
        ("commit", pa.string()),
        ("run", pa.string()),
        ("recall", pa.float64()),
        ("reasons", pa.list_(pa.string())),
        ("newly_missed", pa.list_(pa.string())),
        ("time", pa.string()),
    ]
)


def read_current(release_dir: AnyPath) -> dict | None:
    path = release_dir / CURRENT
    if not path.exists():
        return None
    current = json.loads(path.read_text())
    missing = [k for k in CURRENT_KEYS if k not in current]
    if missing:
        raise ValueError(f"{path}: missing keys {missing}")
    return current


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
    """The new live release: its per-question results first, then `current.json`, which names it."""
    write_table(pa.Table.from_pandas(results, preserve_index=False), release_dir / QUESTIONS)
    write_bytes(json.dumps({k: current[k] for k in CURRENT_KEYS}, indent=1).encode(), release_dir / CURRENT)
