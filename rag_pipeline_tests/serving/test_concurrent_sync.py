"""A served table synced by several processes at once stays sound: each chunk_id once, exactly the
rows of the last sync; `duplicate_chunk_ids` says when a table is not."""

import numpy as np
import pyarrow as pa
import pytest

from rag_pipeline.lib.serving import LazyRows, duplicate_chunk_ids, sync_table
from rag_pipeline_tests.serving.test_serving import DIM, NOW, chunks, ids_in, rows_of, unit
from rag_pipeline_tests.support.served import open_table


class Interleaved(LazyRows):
    """The rows of a sync during which another writer adds rows to the table (`times` times, a row
    of a chunk_id the table holds already and a row of its own), while the sync builds its rows:
    a process syncing the same table at the same time from other rows, and not checking it after."""

    def __init__(self, frame, vectors, db_dir, times: int):
        super().__init__(frame, vectors)
        self.db_dir, self.times = db_dir, times

    def take(self, positions):
        if self.times:
            self.times -= 1
            theirs = chunks({f"other{self.times}": []}, per_note=1)
            rows = pa.concat_tables([super().take(np.array([0])), rows_of(theirs)])
            open_table(self.db_dir, "fixed_1000").lance.add(rows)
        return super().take(positions)


def test_a_sync_another_writer_interleaves_with_leaves_each_chunk_id_once(tmp_path):
    frame = chunks({"n1": [], "n2": []})
    vectors = unit(np.random.default_rng(0).normal(size=(len(frame), DIM)))
    sync_table(tmp_path, "fixed_1000", LazyRows(frame.head(4), vectors[:4]), retain=NOW)
    assert duplicate_chunk_ids(open_table(tmp_path, "fixed_1000")) == 0
    sync_table(tmp_path, "fixed_1000", Interleaved(frame, vectors, tmp_path, times=1), retain=NOW)
    table = open_table(tmp_path, "fixed_1000")
    assert duplicate_chunk_ids(table) == 0 and table.count_rows() == len(frame)
    assert ids_in(tmp_path) == set(frame["chunk_id"])
    table.lance.add(rows_of(frame.head(2)))
    assert duplicate_chunk_ids(table) == 2
    with pytest.raises(ValueError, match="table fixed_1000: still not the rows synced after 5 writes"):
        sync_table(tmp_path, "fixed_1000", Interleaved(frame.head(8), vectors[:8], tmp_path, times=9))
