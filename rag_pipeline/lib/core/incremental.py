"""Which notes changed between two builds, and content-derived versions of a build's output."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

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


def rebuild_by_note(
    previous: list[dict],
    notes: list[dict],
    key: Callable[[dict], str],
    build: Callable[[dict], list[dict]],
    refresh: Callable[[dict, dict], dict],
) -> tuple[list[dict], NoteChanges]:
    """Rows for `notes`, in their order: a note whose `key` equals that of its previous rows keeps
    them (passed through `refresh(row, note)`), any other note's rows come from `build(note)`.

    A row written before a key's field existed gives None there, so nothing of it is reused."""
    kept: dict[str, list[dict]] = {}
    for row in previous:
        kept.setdefault(row["note"], []).append(row)
    changes = note_changes({n: key(rows[0]) for n, rows in kept.items()}, {n["note"]: key(n) for n in notes})
    reuse = set(changes.unchanged)
    rows: list[dict] = []
    for note in notes:
        if note["note"] in reuse:
            rows += [refresh(row, note) for row in kept[note["note"]]]
        else:
            rows += build(note)
    return rows, changes
