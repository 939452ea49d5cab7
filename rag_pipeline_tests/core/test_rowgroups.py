"""Parquet files read a row group at a time: a column's values at positions across row groups, and
shards of notes merged into the notes' order as `in_note_order` orders their concatenation, with a
note's rows split across two batches and a column one shard holds only nulls of."""

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rag_pipeline.lib.core import ColumnRows, in_note_order, merged_in_order, note_buckets


def test_a_column_is_read_at_positions_from_the_row_groups_that_hold_them(tmp_path):
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"text": [f"t{i}" for i in range(10)]}), path, row_group_size=3)
    rows = ColumnRows(path, "text")
    assert len(rows) == 10 and rows.file.num_row_groups == 4
    assert rows[[9, 0, 4, 5, 3]] == ["t9", "t0", "t4", "t5", "t3"]
    assert rows[[]] == []


def test_shards_merge_into_the_notes_order_one_group_at_a_time(tmp_path):
    notes = [f"note-{i}" for i in range(40)]
    rows = [n for n in notes for _ in range(1 + int(n[5:]) % 4)]  # 1 to 4 rows a note
    frame = pd.DataFrame({"note": rows, "chunk": range(len(rows))})
    rank = {n: i for i, n in enumerate(notes[::2] + notes[1::2])}  # an order no file sorts by
    buckets = note_buckets(rows, 3)
    frame["heading"] = [None if b == 0 else f"h{i}" for i, b in enumerate(buckets)]
    files = []
    for k in range(3):  # each shard in that order, as a shard's step writes it
        part = in_note_order(frame[buckets == k], rank)
        if k == 0:  # a column it holds only nulls of, as a shard's own frame has it: its file types it null
            part = part.assign(heading=pd.Series([None] * len(part), dtype=object))
        shard = pa.Table.from_pandas(part, preserve_index=False)
        pq.write_table(shard, tmp_path / f"{k}.parquet", row_group_size=2)
        files.append(pq.ParquetFile(tmp_path / f"{k}.parquet"))
    # batches of 3 rows: a note's rows split across two of them
    schema, tables = merged_in_order(files, "note", rank, batch_rows=3)
    merged = pa.concat_tables(tables).to_pandas()
    assert files[0].schema_arrow.field("heading").type == pa.null()
    assert schema.field("heading").type == pa.large_string()
    pd.testing.assert_frame_equal(merged, in_note_order(frame, rank))
