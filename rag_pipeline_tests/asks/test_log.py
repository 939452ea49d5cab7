"""The ask log on real files and on an S3 server: whole records, none lost to concurrent writers,
flags beside them, and who may read a record."""

import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone

import pytest

from rag_pipeline.lib.asks import AskLogError, append, flag, log_location, new_record, read_log, visible
from rag_pipeline.lib.core import Location, location

HIT = {
    "chunk_id": "c1",
    "note": "deadlock",
    "heading_path": "Deadlock > 再試行",
    "commit": "abc",
    "text": "…",
}


def record(question: str, groups=(), notes=("deadlock",)) -> dict:
    hits = [HIT | {"chunk_id": f"c{i}", "note": n} for i, n in enumerate(notes)]
    served = {"configuration": "fixed-1000/dense", "commit": "abc", "table_version": 3}
    said = {"answer": "最大 3 回 [1]", "abstained": False, "citations": [1]}
    return new_record(question, list(groups), served, hits, said, {"retrieval": 1.23, "answer": 4.56})


def test_a_record_holds_what_was_served_and_no_passage_text(tmp_path):
    rid = append(
        tmp_path, record("再試行は何回?", ["sre"]), datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    )
    assert rid.startswith("20260102-030405-")
    (found,) = read_log(tmp_path)
    assert found["id"] == rid and found["groups"] == ["sre"] and found["flag"] is None
    assert found["passages"] == [
        {"chunk_id": "c0", "note": "deadlock", "heading_path": "Deadlock > 再試行", "commit": "abc"}
    ]
    assert found["latency_ms"] == {"retrieval": 1.2, "answer": 4.6}
    assert "…" not in json.dumps(found, ensure_ascii=False)  # the passage's text stays in the notes
    assert [p.name for p in tmp_path.iterdir()] == [f"{rid}.json"]  # no temporary file left


def write_many(args: tuple[str, int]) -> list[str]:
    log, n = args
    return [append(location(log), record(f"question {i}")) for i in range(n)]


def test_writers_at_once_lose_no_record(tmp_path):
    # an executor, not `Pool`, whose terminate on leaving a `with` can wait for good on a worker it
    # started while terminating (seen once in CI: the test hung, every record written)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=spawn) as pool:
        ids = [rid for batch in pool.map(write_many, [(str(tmp_path), 25)] * 4) for rid in batch]
    assert len(set(ids)) == 100
    assert sorted(r["id"] for r in read_log(tmp_path)) == sorted(ids)


def test_a_flag_is_a_file_of_its_own_and_names_a_record(tmp_path):
    rid = append(tmp_path, record("q"))
    before = (tmp_path / f"{rid}.json").read_bytes()
    flag(tmp_path, rid, "  wrong: the answer is 3 retries  ")
    flag(tmp_path, rid, "wrong: 3 retries, then the queue")  # the later flag replaces the earlier
    (found,) = read_log(tmp_path)
    assert found["flag"]["reason"] == "wrong: 3 retries, then the queue"
    assert (tmp_path / f"{rid}.json").read_bytes() == before  # a record is never rewritten
    for bad, reason, message in (
        ("20260102-030405-00000000", "x", "no record"),
        ("../../etc/passwd", "x", "no record"),
        (rid, "  ", "--reason"),
    ):
        with pytest.raises(AskLogError, match=message):
            flag(tmp_path, bad, reason)


def test_a_damaged_record_is_named(tmp_path):
    append(tmp_path, record("q"))
    (tmp_path / "20260101-000000-deadbeef.json").write_text("{")
    with pytest.raises(AskLogError, match=r"20260101-000000-deadbeef\.json: not a JSON record"):
        read_log(tmp_path)


def test_a_record_is_read_with_every_group_it_was_asked_with_while_its_notes_are_readable():
    records = [
        {"id": "public", "groups": [], "passages": [{"note": "deadlock"}]},
        {"id": "sre", "groups": ["sre"], "passages": [{"note": "oom"}]},
        {"id": "both", "groups": ["payments", "sre"], "passages": []},
    ]
    access = {"deadlock": (), "oom": ("sre",)}
    shown = lambda groups, access=access: [r["id"] for r in visible(records, groups, access).records]  # noqa: E731
    assert shown([]) == ["public"]
    assert shown(["sre"]) == ["public", "sre"]
    assert shown(["payments", "sre"]) == ["public", "sre", "both"]
    # a note restricted since: its records are withheld from an asker who may no longer read it
    narrowed = {"deadlock": ("sre",), "oom": ("sre",)}
    assert shown([], narrowed) == [] and visible(records, [], narrowed).withheld == 1
    assert shown(["sre"], narrowed) == ["public", "sre"]
    assert shown(["sre"], {"oom": ("sre",)}) == ["sre"]  # a deleted note: nobody
    assert shown(["payments", "sre"], None) == ["both"]  # no notes read yet: only records citing none


def test_where_the_log_is(tmp_path):
    assert log_location("off", str(tmp_path)) is None
    assert log_location("", str(tmp_path)) == tmp_path / "asks"
    assert log_location(str(tmp_path / "elsewhere"), str(tmp_path)) == tmp_path / "elsewhere"


def test_the_log_on_an_object_store(s3):
    log = log_location("", s3)
    assert isinstance(log, Location) and str(log) == f"{s3}/asks"
    assert read_log(log) == []
    ids = [append(log, record(f"q{i}", ["sre"])) for i in range(3)]
    flag(log, ids[1], "wrong")
    found = {r["id"]: r for r in read_log(log)}
    assert sorted(found) == sorted(ids) and [bool(found[i]["flag"]) for i in ids] == [False, True, False]
    with pytest.raises(AskLogError, match="no record"):
        flag(log, "20260102-030405-00000000", "x")
