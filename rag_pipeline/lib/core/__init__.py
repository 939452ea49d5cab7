"""What every stage stands on: atomic storage (local or s3://), content-addressed segments, the JSON
HTTP client and its deadline, the one access rule, the fence around note text in a prompt, one-writer
locks, near-miss names, incremental rebuilds by note."""

from rag_pipeline.lib.core.access import (
    UNAUTHORIZED,
    leaked_rows,
    may_read,
    readable_mask,
    readable_units,
    unknown_group,
)
from rag_pipeline.lib.core.arrowfile import read_arrow, write_arrow
from rag_pipeline.lib.core.fence import Fence
from rag_pipeline.lib.core.http import JsonClient, ServerError, bearer, without_v1
from rag_pipeline.lib.core.incremental import content_version, in_note_order, note_buckets, rebuild_by_note
from rag_pipeline.lib.core.localfile import DiskFullError
from rag_pipeline.lib.core.locks import DirectoryLock
from rag_pipeline.lib.core.names import closest, edit_distance, fold
from rag_pipeline.lib.core.publish import publish_directory
from rag_pipeline.lib.core.rowgroups import ColumnRows, joined_in_order, merged_in_order
from rag_pipeline.lib.core.segments import VERSION_FILE, SegmentStore, text_hash, version_dir, version_key
from rag_pipeline.lib.core.storage import (
    AnyPath,
    Location,
    StorageError,
    as_path,
    location,
    parquet_file,
    read_frame,
    read_table,
    regrouped,
    shown_path,
    storage_options,
    table_bytes,
    tree_bytes,
    write_batches,
    write_bytes,
    write_frame,
    write_table,
)
from rag_pipeline.lib.core.text import PARAGRAPH_END, SENTENCE_BREAK, SENTENCE_END, SENTENCE_SPLIT, clipped
from rag_pipeline.lib.core.vectors import vector_column, vector_matrix

__all__ = [
    "PARAGRAPH_END",
    "SENTENCE_BREAK",
    "SENTENCE_END",
    "SENTENCE_SPLIT",
    "UNAUTHORIZED",
    "VERSION_FILE",
    "AnyPath",
    "ColumnRows",
    "DirectoryLock",
    "DiskFullError",
    "Fence",
    "JsonClient",
    "Location",
    "SegmentStore",
    "ServerError",
    "StorageError",
    "as_path",
    "bearer",
    "clipped",
    "closest",
    "content_version",
    "edit_distance",
    "fold",
    "in_note_order",
    "joined_in_order",
    "leaked_rows",
    "location",
    "may_read",
    "merged_in_order",
    "note_buckets",
    "parquet_file",
    "publish_directory",
    "read_arrow",
    "read_frame",
    "read_table",
    "readable_mask",
    "readable_units",
    "rebuild_by_note",
    "regrouped",
    "shown_path",
    "storage_options",
    "table_bytes",
    "text_hash",
    "tree_bytes",
    "unknown_group",
    "vector_column",
    "vector_matrix",
    "version_dir",
    "version_key",
    "without_v1",
    "write_arrow",
    "write_batches",
    "write_bytes",
    "write_frame",
    "write_table",
]
