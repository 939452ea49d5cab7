"""Which notes changed between two builds, and content-derived versions of a build's output."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa


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


def note_buckets(notes: Sequence[str], n: int) -> np.ndarray:
    """Each row's part (0 to n - 1) by a hash of its note's path alone, so that what else the corpus
    holds never moves a note: a lane's embedding files, and its shards (`RAG_SHARDS`)."""
    inverse, names = pd.factorize(np.asarray(notes, dtype=object))
    per_note = [int(hashlib.sha256(str(name).encode()).hexdigest()[:8], 16) % n for name in names]
    return np.asarray(per_note, np.int64)[inverse] if len(names) else np.zeros(0, np.int64)


def content_version(frame: pd.DataFrame, columns: list[str]) -> str:
    """A short hash of the given columns' values: equal data gives an equal version. Columns of
    strings, integers and booleans are hashed as Arrow buffers (whatever their dtype), the rest as
    JSON (floats to 6 decimals, so that a last-bit difference in a score is no change)."""
    digest = hashlib.sha256(json.dumps(columns).encode())
    for name in columns:
        if not _hash_column(frame[name], digest):
            body = frame[columns].to_json(orient="values", force_ascii=False, double_precision=6)
            return hashlib.sha256(body.encode()).hexdigest()[:16]
    return digest.hexdigest()[:16]


def _hash_column(column: pd.Series, digest) -> bool:
    """Feed a column of strings, integers or booleans to `digest`; False for any other column."""
    kind = pd.api.types.infer_dtype(column, skipna=True)
    if kind in ("integer", "boolean"):
        values = column.to_numpy(dtype=np.int64, na_value=np.iinfo(np.int64).min)
        digest.update(b"i" + values.tobytes() + column.isna().to_numpy().tobytes())
        return True
    if kind not in ("string", "empty"):
        return False
    strings = pa.array(column, pa.large_string())
    if isinstance(strings, pa.ChunkedArray):  # an Arrow-backed column
        strings = strings.combine_chunks()
    offsets = np.frombuffer(strings.buffers()[1], np.int64)[
        strings.offset : strings.offset + len(strings) + 1
    ]
    data = strings.buffers()[2]
    body = b"" if data is None or not len(strings) else data[int(offsets[0]) : int(offsets[-1])]
    digest.update(b"s" + (offsets - offsets[0]).tobytes() + column.isna().to_numpy().tobytes())
    digest.update(memoryview(body))
    return True


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
    rows: Callable[[list[str]], pd.DataFrame] | None = None,
) -> tuple[pd.DataFrame, NoteChanges]:
    """Rows for `notes`, in their order: a note whose `key` columns equal those of its previous
    rows keeps them, with the `refresh` columns ({row column: note column}) taken from the note;
    any other note's rows come from `build(note)` (the note as a dict). Only rebuilt notes are
    handled row by row, so an edit costs its notes plus vectorized work over the rest. With
    `rows`, `notes` need hold only the key and refresh columns: `rows(names)` gives the whole rows
    of the notes to build (those `build` is given).

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
    # note columns as lists: pandas' map and isin over Arrow strings cost ~10x more
    reuse = np.fromiter((n in unchanged for n in notes["note"].tolist()), bool, len(notes))
    targets = notes[~reuse]
    if rows is not None and len(targets):
        targets = rows(targets["note"].tolist())
    built = pd.DataFrame([row for note in targets.to_dict("records") for row in build(note)])
    if not len(built) and not reuse.any():
        return pd.DataFrame(), changes
    columns = list(built.columns) if len(built) else list(previous.columns)
    position = dict(zip(notes["note"], range(len(notes))))
    if not reuse.any():
        return built[columns], changes
    previous = previous.copy()
    previous_notes = previous["note"].tolist()
    for column, source in refresh.items():
        value = dict(zip(notes["note"].tolist(), notes[source].tolist()))
        previous[column] = [value.get(n) for n in previous_notes]
    keep = np.fromiter((n in unchanged for n in previous_notes), bool, len(previous_notes))
    at = np.array([position.get(n, np.nan) for n in previous_notes], dtype=float)
    return _in_note_order(previous[columns], keep, at, built, position), changes


def in_note_order(frame: pd.DataFrame, position: dict[str, int]) -> pd.DataFrame:
    """`frame`'s rows ordered by their note's `position`, the rows of one note in their order."""
    order = np.argsort(frame["note"].map(position).to_numpy(), kind="stable")
    return frame.iloc[order].reset_index(drop=True)


MAX_PIECES = 64  # past this many runs of kept rows and built notes, one reordering take is cheaper


def _in_note_order(
    previous: pd.DataFrame, keep: np.ndarray, at: np.ndarray, built: pd.DataFrame, position: dict[str, int]
) -> pd.DataFrame:
    """The kept rows of `previous` and the `built` rows, ordered by their note's `position` (rows
    of one note in their order). When the previous rows are in note order and few notes changed,
    slices are spliced rather than every row reordered: an edit costs its notes, not the corpus.
    `at`: each previous row's note position (NaN for a note gone)."""
    kept = np.flatnonzero(keep)
    notes = built["note"].to_numpy() if len(built) else np.array([], dtype=object)
    bounds = (
        [*np.flatnonzero(np.concatenate([[True], notes[1:] != notes[:-1]])), len(notes)] if len(notes) else []
    )
    blocks = list(itertools.pairwise(bounds))  # each built note's rows
    cuts = np.searchsorted(at[kept], [position[notes[a]] for a, _ in blocks]).astype(int)
    breaks = np.flatnonzero(np.diff(kept) != 1) + 1  # where the kept rows stop being one slice
    edges = np.unique(np.concatenate([[0, len(kept)], cuts, breaks])).astype(int)
    if np.any(np.diff(at[kept]) < 0) or len(edges) + len(blocks) > MAX_PIECES:
        return in_note_order(pd.concat([previous[keep], built], ignore_index=True), position)
    parts, b = [], 0
    for lo, hi in itertools.pairwise(edges):
        while b < len(blocks) and cuts[b] <= lo:
            parts.append(built.iloc[blocks[b][0] : blocks[b][1]])
            b += 1
        parts.append(previous.iloc[kept[lo] : kept[hi - 1] + 1])
    parts += [built.iloc[x:y] for x, y in blocks[b:]]
    return pd.concat(parts, ignore_index=True)
