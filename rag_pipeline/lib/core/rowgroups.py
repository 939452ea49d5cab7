"""Parquet files read a row group at a time, so that a step over a whole lane holds one group, not
the lane: a column's values at given positions (`ColumnRows`), and files partitioned by a key
merged into one sequence in a given order of the keys (`merged_in_order`)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rag_pipeline.lib.core.storage import AnyPath, parquet_file, regrouped, write_batches


class ColumnRows:
    """One column of a Parquet file, indexed by row positions: `rows[positions]` is the list of its
    values there, read from the row groups that hold them (the last one read is kept)."""

    def __init__(self, file: pq.ParquetFile | AnyPath, column: str):
        self.file = file if isinstance(file, pq.ParquetFile) else parquet_file(file)
        self.column = column
        sizes = [self.file.metadata.row_group(g).num_rows for g in range(self.file.num_row_groups)]
        self.starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        self.held: tuple[int, list] | None = None

    def __len__(self) -> int:
        return int(self.starts[-1])

    def group(self, g: int) -> list:
        if self.held is None or self.held[0] != g:
            self.held = (g, self.file.read_row_group(g, columns=[self.column]).column(0).to_pylist())
        return self.held[1]

    def __getitem__(self, positions: Sequence[int] | np.ndarray) -> list:
        positions = np.asarray(positions, dtype=np.int64)
        if len(positions) and (positions.min() < 0 or positions.max() >= len(self)):
            raise IndexError(f"{self.column}: row out of range 0..{len(self) - 1}")
        groups = np.searchsorted(self.starts, positions, side="right") - 1
        return [self.group(int(g))[int(p - self.starts[g])] for p, g in zip(positions, groups)]


def _runs(file: pq.ParquetFile, key: str, batch_rows: int) -> Iterator[tuple[str, pa.Table]]:
    """The file's rows as (key value, the rows of one run of that value), a batch at a time."""
    for batch in file.iter_batches(batch_size=batch_rows):
        values = batch.column(key).to_pylist()
        start = 0
        for end in range(1, len(values) + 1):
            if end == len(values) or values[end] != values[start]:
                yield values[start], pa.Table.from_batches([batch.slice(start, end - start)])
                start = end


def merged_in_order(
    files: Sequence[pq.ParquetFile], key: str, rank: Mapping[str, int], batch_rows: int = 8192
) -> tuple[pa.Schema, Iterator[pa.Table]]:
    """The rows of `files`, each holding its own keys in the order of `rank` (a partition of one
    sequence, as shards of notes are), as that one sequence: the runs of each key in `rank`'s order,
    the rows of one run in their order, each file read a batch at a time; and their schema, one for
    all (a column a file holds only nulls of has the type the others give it)."""
    # the fields in the order of the files with rows (an empty one may have fewer, of no type)
    schemas = [f.schema_arrow for f in sorted(files, key=lambda f: f.metadata.num_rows == 0)]
    schema = pa.unify_schemas(schemas, promote_options="permissive")
    return schema, _merged([_runs(f, key, batch_rows) for f in files], schema, rank)


def _merged(
    runs: list[Iterator[tuple[str, pa.Table]]], schema: pa.Schema, rank: Mapping[str, int]
) -> Iterator[pa.Table]:
    heads: list[tuple[str, pa.Table] | None] = [next(r, None) for r in runs]
    # (rank, file): a run split across two batches of one file keeps its rank, and comes next
    last = len(rank)  # a key `rank` does not know goes last, as `in_note_order` puts it
    queue = [(rank.get(h[0], last), i) for i, h in enumerate(heads) if h is not None]
    heapq.heapify(queue)
    while queue:
        _, i = heapq.heappop(queue)
        yield heads[i][1].cast(schema)
        heads[i] = next(runs[i], None)
        if heads[i] is not None:
            heapq.heappush(queue, (rank.get(heads[i][0], last), i))


def joined_in_order(
    parts: Sequence[AnyPath], key: str, order: Sequence[str], path: AnyPath, rows: int
) -> None:
    """The Parquet files `parts` (a partition by `key`, each in `order`'s order) written as the one
    file at `path` in `order`'s order (`merged_in_order`), in row groups of `rows` rows, atomically."""
    schema, merged = merged_in_order(
        [parquet_file(p) for p in parts], key, {value: i for i, value in enumerate(order)}, rows
    )
    write_batches(regrouped(merged, rows), schema, path, row_group_size=rows)
