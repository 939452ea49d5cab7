"""Narrowing live at once (`narrow_live`, `release/revoked.json`): a note restricted or deleted since
the live release is withheld from every live search (`open_live` + `search_rows`) of an asker outside
its new groups, on a local data directory and on S3; widening waits for a release, also after a
narrowing; a release replaces what was withheld; tags lagging behind `current.json` are covered; a
record that cannot be read stops every live search."""

import json

import numpy as np
import pytest

from rag_pipeline.lib.core import location, write_bytes
from rag_pipeline.lib.release import CURRENT_KEYS, narrow_live
from rag_pipeline.lib.serving import (
    RevokedError,
    open_live,
    read_revocation,
    search_rows,
    sync_table,
    tag_live,
)
from rag_pipeline_tests.serving.test_serving import DIM, NOW, chunks, rows_of
from rag_pipeline_tests.support.served import open_table

LIVE = {"a": [], "b": [], "c": ["sre"], "d": ["payments", "sre"], "e": []}


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path):
    return location(request.getfixturevalue("s3") if request.param == "s3" else str(tmp_path))


def release(root, notes: dict[str, list[str]], commit: str, tag: bool = True) -> int:
    """`notes` served and released as commit `commit`: the table synced, `current.json` naming its
    version, then (unless `tag` is false: a release that died there) the `live` tag moved."""
    version = sync_table(root / "lancedb", "fixed_1000", rows_of(chunks(notes, 2, tag=commit)), retain=NOW)[
        "version"
    ]
    current = dict.fromkeys(CURRENT_KEYS, "") | {"k": 5, "recall": 1.0, "previous_commit": None}
    current |= {"decision": "released", "commit": commit, "table_versions": {"fixed_1000": version}}
    write_bytes(json.dumps(current).encode(), root / "release" / "current.json")
    if tag:
        tag_live(open_table(root / "lancedb", "fixed_1000"), version)
    return version


def shown(root, groups) -> set[str]:
    """The notes a live search by an asker in `groups` returns (every row it may read: k > rows)."""
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    return set(
        search_rows(open_live(str(root), "fixed-1000"), query, 50, groups, ["note"])["note"].to_pylist()
    )


def test_a_narrowing_is_withheld_from_every_live_search_at_once(root):
    release(root, LIVE, "c1")
    assert shown(root, []) == {"a", "b", "e"}
    now = {"a": ["sre"], "b": [], "c": ["sre"], "d": ["sre"]}  # a restricted, d narrowed, e deleted
    revoked, changed = narrow_live(root, now, "c2")
    assert changed and revoked.notes == {"a": ("sre",), "d": ("sre",), "e": None}
    assert revoked.commit == "c2" and "3 note(s) withheld" in revoked.summary()
    assert shown(root, []) == {"b"}
    assert shown(root, ["payments"]) == {"b"}
    assert shown(root, ["sre"]) == {"a", "b", "c", "d"}
    assert shown(root, None) == {"a", "b", "c", "d"}  # no access rule: only the deleted note is gone
    assert open_live(str(root), "fixed-1000").table.count_rows() == 10  # the live version is unchanged
    assert narrow_live(root, now, "c3") == (revoked, False)  # nothing new: not written again

    # widening waits for a release, also of a note narrowed since it
    widened, _ = narrow_live(root, {"a": [], "b": [], "c": [], "d": ["payments", "sre"], "e": []}, "c4")
    assert widened.notes == revoked.notes and shown(root, []) == {"b"}
    # a release carries the notes as they are now, and with it, what was withheld goes
    release(root, {"a": [], "b": [], "c": [], "d": ["payments", "sre"], "e": []}, "c4")
    assert (
        narrow_live(root, {"a": [], "b": [], "c": [], "d": ["payments", "sre"], "e": []}, "c4")[0].notes == {}
    )
    assert not (root / "release" / "revoked.json").exists()
    assert shown(root, []) == {"a", "b", "c", "e"}


def test_a_live_tag_behind_current_json_is_narrowed_too(tmp_path):
    root = location(str(tmp_path))
    release(root, LIVE, "c1")
    release(root, LIVE | {"b": ["sre"]}, "c2", tag=False)  # died before moving the tag: it serves c1
    revoked, _ = narrow_live(root, LIVE | {"b": ["sre"]}, "c2")
    assert revoked.notes == {"b": ("sre",)}  # public in the tagged version, which `open_live` reads
    assert shown(root, []) == {"a", "e"}


def test_nothing_is_withheld_before_a_first_release(tmp_path):
    root = location(str(tmp_path))
    assert narrow_live(root, {"a": ["sre"]}, "c1") == (read_revocation(root), False)
    assert not (tmp_path / "lancedb").exists()  # nothing made either


@pytest.mark.parametrize("damage", [b"{", b'{"notes": 7}', b"[]"])
def test_a_record_that_cannot_be_read_stops_every_live_search(tmp_path, damage):
    root = location(str(tmp_path))
    release(root, LIVE, "c1")
    (tmp_path / "release" / "revoked.json").write_bytes(damage)
    with pytest.raises(RevokedError, match=r"release/revoked.json cannot be read .*run `make run`"):
        shown(root, [])
