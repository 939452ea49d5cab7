"""The experiment ledger's listing rebuilt from its folders: `index.parquet` lists exactly the
`<id>/` folders that hold outcomes, and `current.json` names two of them, whatever happened to either
file (deleted, truncated, written by hand). A build runs `repair` before it records, so a broken
ledger never stops it; `python -m rag_pipeline.experiments repair` runs it on demand."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from rag_pipeline.lib.core import AnyPath, write_bytes, write_frame
from rag_pipeline.lib.evaluation.experiments import (
    CURRENT,
    INDEX,
    INDEX_COLUMNS,
    OUTCOMES,
    RECORD,
    LedgerError,
    folder_files,
    read_current,
    read_index,
    read_outcomes,
)
from rag_pipeline.lib.evaluation.ranking import best_fields


def recovered_row(root: AnyPath, experiment: str) -> dict:
    """The index row of a folder recorded before its `experiment.json` was written, from its outcomes:
    what shaped them (commit, embedder, settings) is not known, its time is the file's."""
    path = root / experiment / OUTCOMES
    frame = read_outcomes(root, experiment)
    mtime = path.stat().st_mtime if isinstance(path, Path) else None
    return {
        "id": experiment,
        "time": datetime.fromtimestamp(mtime, timezone.utc).isoformat(timespec="seconds") if mtime else "",
        "commit": "",
        "embedding_version": "",
        "questions_sha256": "",
        "strategies": sorted(set(frame["strategy"])),
        "retrievers": list(dict.fromkeys(frame["retriever"])),
        **best_fields(frame),
        "settings": json.dumps({"recovered": f"from {OUTCOMES}; the settings were not recorded"}),
    }


def folder_rows(
    root: AnyPath, folders: dict[str, set[str]], listed: dict[str, dict]
) -> tuple[list[dict], list[str]]:
    """Every folder's row, oldest first: its `experiment.json`, else the row the index listed, else
    `recovered_row`; a folder without its `experiment.json` gets one, so it describes itself. And a
    line for each folder left out, its outcomes unreadable."""
    rows, left_out = [], []
    for experiment, names in sorted(folders.items()):
        if OUTCOMES not in names:
            continue
        row = None
        if RECORD in names:
            try:
                row = json.loads((root / experiment / RECORD).read_text())
            except (OSError, ValueError):
                row = None  # written again below
        if not isinstance(row, dict) or set(row) != set(INDEX_COLUMNS):
            try:
                row = listed.get(experiment) or recovered_row(root, experiment)
            except (OSError, ValueError) as exc:
                problem = " ".join(str(exc).split())
                left_out.append(
                    f"left {root / experiment} out: remove it, its {OUTCOMES} cannot be read ({problem})"
                )
                continue
            row = {k: (list(v) if k in ("strategies", "retrievers") else v) for k, v in row.items()}
            write_bytes(json.dumps(row, ensure_ascii=False, indent=1).encode(), root / experiment / RECORD)
        rows.append(row)
    return sorted(rows, key=lambda r: r["time"]), left_out


def repair(root: AnyPath) -> list[str]:
    """Make `index.parquet` list exactly the folders with outcomes, and `current.json` name two of
    them (the two newest when it is missing, unreadable or names a folder that is gone); one line for
    each file rewritten, none when both were right."""
    folders = folder_files(root)
    try:
        index, problem = read_index(root), ""
    except LedgerError as exc:
        index, problem = pd.DataFrame(columns=INDEX_COLUMNS), exc.what
    listed = {r["id"]: r for r in index.astype(object).to_dict("records") if set(r) == set(INDEX_COLUMNS)}
    rows, said = folder_rows(root, folders, listed)
    ids = [r["id"] for r in rows]
    if problem or sorted(index["id"]) != sorted(ids):
        write_frame(pd.DataFrame(rows, columns=INDEX_COLUMNS), root / INDEX)
        why = problem or f"it listed {len(index)} experiment(s)"
        said.append(f"rebuilt {root / INDEX} from the {len(ids)} experiment folder(s): {why}")
    try:
        current, problem = read_current(root), ""
    except LedgerError as exc:
        current, problem = {"id": None, "previous": None}, exc.what
    if problem or current["id"] not in [*ids, None] or current["previous"] not in [*ids, None]:
        current = {"id": ids[-1] if ids else None, "previous": ids[-2] if len(ids) > 1 else None}
        write_bytes(json.dumps(current).encode(), root / CURRENT)
        why = problem or "it named an experiment that is gone"
        named = f"current {current['id'] or 'none'}, previous {current['previous'] or 'none'}"
        said.append(f"rebuilt {root / CURRENT} naming the newest two ({named}): {why}")
    return said
