"""The live version: a tag that syncs and their cleanups never remove, and `open_live` for applications."""

import time

import pytest

from rag_pipeline.lib.serving import NotReleased, live_version, open_live, sync_table, tag_live
from rag_pipeline_tests.serving.test_serving import NOW, chunks, rows_of
from rag_pipeline_tests.support.served import open_table


def test_the_live_version_survives_syncs_that_clean_up_every_other_version(tmp_path):
    db_dir = tmp_path / "lancedb"
    first = chunks({f"n{i}": [] for i in range(4)}, tag="v1")
    released = sync_table(db_dir, "fixed_1000", rows_of(first), retain=NOW)["version"]
    tag_live(open_table(db_dir, "fixed_1000"), released)
    time.sleep(0.05)
    for round_ in range(3):  # every chunk replaced, then a new embedding dimension
        frame = chunks({f"m{i}": [] for i in range(5)}, tag=f"w{round_}")
        result = sync_table(
            db_dir, "fixed_1000", rows_of(frame, seed=round_, dim=16 + 8 * (round_ == 2)), retain=NOW
        )
    assert result["version"] > released

    live = open_live(tmp_path, "fixed-1000").table
    assert live.version == released
    assert sorted(live.read(["chunk_id"])["chunk_id"].to_pylist()) == sorted(first["chunk_id"])
    assert open_table(db_dir, "fixed_1000").count_rows() == 25  # the latest version is still the table's head

    tag_live(open_table(db_dir, "fixed_1000"), result["version"])  # the tag moves
    assert live_version(open_table(db_dir, "fixed_1000")) == result["version"]
    assert open_live(tmp_path, "fixed-1000").table.count_rows() == 25


def test_open_live_names_what_is_missing(tmp_path):
    with pytest.raises(NotReleased, match="no served table 'section'"):
        open_live(tmp_path, "section")
    sync_table(tmp_path / "lancedb", "section", rows_of(chunks({"n1": []})), retain=NOW)
    with pytest.raises(NotReleased, match="no version is tagged 'live' yet"):
        open_live(tmp_path, "section")
