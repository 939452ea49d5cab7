"""Which notes changed between two builds, and content-derived versions of a build's output."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class NoteChanges:
    """Notes sorted by what happened to them; a note is `changed` when its version key differs."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "notes_added": len(self.added),
            "notes_changed": len(self.changed),
            "notes_removed": len(self.removed),
            "notes_unchanged": len(self.unchanged),
        }


def note_changes(previous: dict[str, str], current: dict[str, str]) -> NoteChanges:
    """Compare {note: version key} of the previous build with the current one."""
    changes = NoteChanges(removed=sorted(set(previous) - set(current)))
    for note, key in sorted(current.items()):
        if note not in previous:
            changes.added.append(note)
        elif previous[note] != key:
            changes.changed.append(note)
        else:
            changes.unchanged.append(note)
    return changes


def content_version(frame: pd.DataFrame, columns: list[str]) -> str:
    """A short hash of the given columns' values: equal data gives an equal version."""
    body = frame[columns].to_json(orient="values", force_ascii=False, double_precision=6)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def _keys(frame: pd.DataFrame, columns: list[str]) -> pd.Series | None:
    """Each row's version key (its `columns` joined), None when a column is missing."""
    if any(c not in frame.columns for c in columns):
        return None
    joined = frame[columns[0]].astype(str)
    for column in columns[1:]:
        joined = joined + "|" + frame[column].astype(str)
    return joined


def rebuild_by_note(
    previous: pd.DataFrame | None,
    notes: pd.DataFrame,
    key: list[str],
    build: Callable[[dict], list[dict]],
    refresh: dict[str, str],
) -> tuple[pd.DataFrame, NoteChanges]:
    """Rows for `notes`, in their order: a note whose `key` columns equal those of its previous
    rows keeps them, with the `refresh` columns ({row column: note column}) taken from the note;
    any other note's rows come from `build(note)` (the note as a dict). Only rebuilt notes are
    handled row by row, so an edit costs its notes plus vectorized work over the rest.

    A row written before a key column existed has none, so nothing of it is reused."""
    current = _keys(notes, key)
    if current is None:
        raise KeyError(f"notes lack a key column of {key}")
    before: dict[str, str] = {}
    if previous is not None and len(previous):
        first = previous.drop_duplicates("note")
        old = _keys(first, key)
        before = {} if old is None else dict(zip(first["note"], old))
    changes = note_changes(before, dict(zip(notes["note"], current)))
    unchanged = set(changes.unchanged)
    reuse = notes["note"].isin(unchanged)
    built = pd.DataFrame([row for note in notes[~reuse].to_dict("records") for row in build(note)])
    parts = [built] if len(built) else []
    if reuse.any():
        kept = previous[previous["note"].isin(unchanged)].copy()
        for column, source in refresh.items():
            kept[column] = kept["note"].map(dict(zip(notes["note"], notes[source])))
        parts.insert(0, kept)
    if not parts:
        return pd.DataFrame(), changes
    columns = list(built.columns) if len(built) else list(parts[0].columns)
    frame = pd.concat(parts, ignore_index=True)[columns]
    position = dict(zip(notes["note"], range(len(notes))))
    order = np.argsort(frame["note"].map(position).to_numpy(), kind="stable")
    return frame.iloc[order].reset_index(drop=True), changes
