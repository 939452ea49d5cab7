"""Content-addressed rows in immutable Parquet segments: a text's hash -> one row of other columns.

Every write is a new segment written atomically. A store never loads its rows all at once: it
indexes each segment by reading its `text_hash` column alone, and reads only the row groups
holding the rows asked for. Compaction folds segments of similar size into one (size-tiered, so
frequent small flushes stay cheap) and never touches segments past `merge_bytes`.

Processes on several machines may write and compact one store at once, with no lock: a merged segment
names the segments it replaces in its footer, and every index leaves them out from then on; a
compaction `retire_seconds` later deletes them, so whoever indexed them keeps reading them (and then
indexes the store again). A merge deletes nothing: two merges of one tier leave duplicates."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rag_pipeline.lib.core.storage import (
    AnyPath,
    as_path,
    file_size,
    object_store,
    parquet_file,
    regrouped,
    write_batches,
    write_bytes,
    write_table,
)

KEY = "S32"  # text hashes are 32 hex characters
REPLACES = b"replaces"  # footer key of a merged segment: the names of the segments it holds
VERSION_FILE = "version.json"  # a store version's description, in its folder


def version_key(version: str) -> str:
    """A short folder name for a version string (the full string is kept in `VERSION_FILE`)."""
    return hashlib.sha256(version.encode()).hexdigest()[:16]


def version_dir(root: str | AnyPath, version: str, manifest: dict) -> AnyPath:
    """The folder of one version of a store under `root` (`version_key(version)`), with the full
    description in its `VERSION_FILE`, written once."""
    directory = as_path(root) / version_key(version)
    if not (directory / VERSION_FILE).exists():
        write_bytes(json.dumps(manifest, indent=1).encode(), directory / VERSION_FILE)
    return directory


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def keys_of(hashes: list[str] | pa.ChunkedArray) -> np.ndarray:
    if isinstance(hashes, pa.ChunkedArray):
        hashes = hashes.cast(pa.binary()).to_numpy(zero_copy_only=False)
    return np.asarray(hashes, dtype=KEY)


_OPENED: dict[str, Segment] = {}  # indexes of the segments this process has seen, by path


@dataclass
class Segment:
    path: AnyPath
    keys: np.ndarray  # hashes in row order
    order: np.ndarray  # argsort of keys
    group_starts: np.ndarray  # first row of each row group
    size: int  # bytes on disk
    replaces: frozenset[str]  # names of the segments whose rows a merged segment holds

    @classmethod
    def open(cls, path: AnyPath, keys: np.ndarray | None = None) -> Segment:
        """The segment's index, from its `text_hash` column unless the caller has its `keys`. A
        segment never changes under its name, so its index is read once per process."""
        if keys is None and (known := _OPENED.get(str(path))) is not None:
            return known
        with object_store(path):
            file = parquet_file(path)
            if keys is None:
                keys = keys_of(file.read(columns=["text_hash"]).column(0))
            size = file_size(path)
        sizes = [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        replaces = frozenset(json.loads((file.metadata.metadata or {}).get(REPLACES, b"[]")))
        segment = cls(path, keys, np.argsort(keys, kind="stable"), starts, size, replaces)
        _OPENED[str(path)] = segment
        return segment

    @property
    def written_ns(self) -> int:  # by the writer's clock, in its name
        return int(self.path.name.split("-")[1])

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Row of each key, -1 where absent."""
        if not len(self.keys):
            return np.full(len(keys), -1, np.int64)
        at = np.minimum(np.searchsorted(self.keys, keys, sorter=self.order), len(self.keys) - 1)
        rows = self.order[at]
        return np.where(self.keys[rows] == keys, rows, -1)

    def take(
        self, rows: np.ndarray, columns: list[str], dictionary: list[str]
    ) -> list[tuple[pa.Table, np.ndarray]]:
        """(table, indices into `rows`) per row group read, each group read only when a row lies in it."""
        group = np.searchsorted(self.group_starts, rows, side="right") - 1
        parts = []
        with object_store(self.path):
            file = parquet_file(self.path, read_dictionary=dictionary or None)
            for g in np.unique(group):
                sel = np.flatnonzero(group == g)
                table = file.read_row_group(int(g), columns=columns)
                local = rows[sel] - self.group_starts[g]
                whole = len(local) == table.num_rows and (local == np.arange(len(local))).all()
                parts.append((table if whole else table.take(pa.array(local)), sel))
        return parts


class SegmentStore:
    FANOUT = 8  # segments of one size tier folded into one: a row is rewritten about log8(n) times
    merge_bytes = 32 << 20  # a segment this large is never merged again: bounds a merge's memory
    # how long a replaced segment stays readable: past any reader's index, the longest step and the
    # machines' clock skew (a later reader indexes the store again)
    retire_seconds = 30 * 60
    row_group_size = 2048
    dictionary_columns: tuple[str, ...] = ()  # read as dictionary arrays
    write_options: dict = {"compression": "zstd", "write_statistics": False}  # nothing filters on them

    def __init__(self, directory: str | AnyPath):
        self.dir = as_path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._segments: dict[str, Segment] = {}  # the live ones, by name
        self._replaced: dict[str, tuple[AnyPath, int]] = {}  # name -> (path, when its replacement landed)
        self._indexed = False  # the index is read on first use: a run that needs no row reads nothing

    def _index(self) -> dict[str, Segment]:
        if not self._indexed:
            self.refresh()
        return self._segments

    def _paths(self) -> list[AnyPath]:
        return sorted(self.dir.glob("segment-*.parquet"))

    def refresh(self) -> None:
        """Index segments written since (by any process) but those a merged one replaces."""
        self._indexed = True
        paths = self._paths()
        names = {p.name for p in paths}
        for gone in [s for n, s in self._segments.items() if n not in names]:
            _OPENED.pop(str(gone.path), None)
        known, self._segments, self._replaced = self._segments, {}, {}
        replaced_by: dict[str, int] = {}
        for path in reversed(paths):  # newest first (names sort by time): a replaced one is not opened
            if path.name in replaced_by:
                self._replaced[path.name] = (path, replaced_by[path.name])
                continue
            try:
                segment = known.get(path.name) or Segment.open(path)
            except FileNotFoundError:  # retired by another process meanwhile
                continue
            self._segments[path.name] = segment
            for name in segment.replaces:
                replaced_by[name] = max(replaced_by.get(name, 0), segment.written_ns)
        for name in [n for n in self._segments if n in replaced_by]:  # written on a clock running late
            self._replaced[name] = (self._segments.pop(name).path, replaced_by[name])
        self._segments = dict(sorted(self._segments.items()))  # a look-up finds the oldest copy first

    def live(self) -> list[AnyPath]:
        """The segments a look-up reads now (not replaced by a merged one), indexed anew."""
        return self.refresh() or sorted(s.path for s in self._segments.values())

    def hashes(self) -> list[str]:
        """Every hash stored, once."""
        keys = [s.keys for s in self._index().values()]
        return np.unique(np.concatenate(keys)).astype(str).tolist() if keys else []

    def __len__(self) -> int:
        return len(self.hashes())

    def _locate(self, keys: np.ndarray) -> tuple[list[Segment], np.ndarray, np.ndarray]:
        segments = list(self._index().values())
        where = np.full(len(keys), -1, np.int64)
        rows = np.zeros(len(keys), np.int64)
        for i, segment in enumerate(segments):
            todo = np.flatnonzero(where < 0)
            if not len(todo):
                break
            found = segment.find(keys[todo])
            hit = found >= 0
            where[todo[hit]], rows[todo[hit]] = i, found[hit]
        return segments, where, rows

    def contains(self, hashes: list[str]) -> np.ndarray:
        return self._locate(keys_of(hashes))[1] >= 0

    def read(self, hashes: list[str], columns: list[str]) -> list[tuple[pa.Table, np.ndarray]]:
        """The rows of `hashes` as (table, positions in `hashes`) parts; KeyError if one is absent."""
        keys = keys_of(hashes)
        for attempt in range(3):
            segments, where, rows = self._locate(keys)
            if (where < 0).any():
                missing = np.asarray(hashes)[where < 0]
                raise KeyError(f"{len(missing)} texts not in {self.dir}, e.g. {missing[0]}")
            try:
                parts = []
                for i in np.unique(where):
                    sel = np.flatnonzero(where == i)
                    sel = sel[np.argsort(rows[sel], kind="stable")]  # row order: whole groups need no take
                    dictionary = [c for c in self.dictionary_columns if c.split(".")[0] in columns]
                    parts += [(t, sel[at]) for t, at in segments[i].take(rows[sel], columns, dictionary)]
                return parts
            except FileNotFoundError:  # another process compacted a segment away: look again
                if attempt == 2:
                    raise
                self.refresh()
        raise AssertionError("unreachable")

    def append(self, table: pa.Table) -> None:
        """A new segment of `table` (with a `text_hash` column), then compaction."""
        if not table.num_rows:
            return
        self._write(table)
        self.compact()

    def _new_path(self) -> AnyPath:
        return self.dir / f"segment-{time.time_ns()}-{os.getpid()}.parquet"

    def _write(self, table: pa.Table) -> None:
        path = self._new_path()
        write_table(table, path, row_group_size=self.row_group_size, **self.write_options)
        self._segments[path.name] = Segment.open(path, keys_of(table.column("text_hash")))

    def compact(self) -> None:
        """Delete the segments replaced more than `retire_seconds` ago; fold every FANOUT segments
        of one size tier (a power of FANOUT bytes) into one."""
        self.refresh()
        retired = time.time_ns() - int(self.retire_seconds * 1e9)
        for name, (path, replaced_at) in list(self._replaced.items()):
            if replaced_at <= retired:  # past any reader's index
                path.unlink(missing_ok=True)
                del self._replaced[name]
                _OPENED.pop(str(path), None)
        while True:
            tiers: dict[int, list[Segment]] = {}
            for segment in self._segments.values():
                if segment.size < self.merge_bytes:
                    tiers.setdefault(int(math.log(max(segment.size, 1), self.FANOUT)), []).append(segment)
            full = [group for group in tiers.values() if len(group) >= self.FANOUT]
            if not full or not self._merge(full[0]):
                return

    def _merge(self, victims: list[Segment]) -> bool:
        """One segment of the victims' rows, one row per hash in the order written (rows of one
        write stay together), streamed row group by row group: a merge holds a group, not the
        segments. Its footer names the segments it replaces (and those they replace, still there)."""
        keys = np.concatenate([s.keys for s in victims])
        _, first = np.unique(keys, return_index=True)
        keep = np.zeros(len(keys), bool)
        keep[first] = True
        names = {s.path.name for s in victims}
        replaces = sorted(names | {n for s in victims for n in s.replaces if n in self._replaced})

        def kept_rows():
            offset = 0
            for segment in victims:
                with object_store(segment.path):
                    file = parquet_file(segment.path)
                    for g in range(file.num_row_groups):
                        table = file.read_row_group(g)
                        start = offset + int(segment.group_starts[g])
                        rows = np.flatnonzero(keep[start : start + table.num_rows])
                        if len(rows):
                            yield table if len(rows) == table.num_rows else table.take(pa.array(rows))
                offset += len(segment.keys)

        path = self._new_path()
        try:
            with object_store(victims[0].path):
                schema = parquet_file(victims[0].path).schema_arrow
            write_batches(
                regrouped(kept_rows(), self.row_group_size),
                schema,
                path,
                row_group_size=self.row_group_size,
                footer=lambda: {REPLACES: json.dumps(replaces)},
                **self.write_options,
            )
        except FileNotFoundError:  # retired by another process's compaction meanwhile
            return False
        self._segments[path.name] = Segment.open(path, keys[np.sort(first)])
        for segment in victims:
            self._replaced[segment.path.name] = (segment.path, self._segments[path.name].written_ns)
            del self._segments[segment.path.name]
        return True
