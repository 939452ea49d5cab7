"""Arrow IPC files, for caches rewritten on every run: a table of list columns takes Parquet about
20 times longer to write (the BM25 term columns of 86,000 chunks: 180-260 ms, against 9 ms)."""

from __future__ import annotations

import pyarrow as pa

from rag_pipeline.lib.core.storage import AnyPath, Location, as_path, object_store, write_bytes


def write_arrow(table: pa.Table, path: str | AnyPath) -> None:
    """`table` as one uncompressed Arrow IPC file, written atomically."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    write_bytes(sink.getvalue().to_pybytes(), path)


def read_arrow(path: str | AnyPath) -> pa.Table:
    path = as_path(path)
    if isinstance(path, Location):
        with object_store(path), path.fs.open_input_file(path.key) as source:
            return pa.ipc.open_file(source).read_all()
    with pa.OSFile(str(path)) as source:
        return pa.ipc.open_file(source).read_all()
