"""The chunks lane as plain calls, without Dagster: only what changed is rebuilt and read whole,
and the coverage check skips what was checked against the same texts."""

import pandas as pd

from rag_pipeline.lib.chunking import STRATEGIES, chunk_lane, unchecked_coverage
from rag_pipeline.lib.sources import clean_note

NOTES = {"a": "### A\n" + "一つ目の文です。" * 200, "b": "### B\nおわり。\n", "c": "### C\n" + "三。" * 300}


def cleaned(texts: dict[str, str], versions: dict[str, str]) -> pd.DataFrame:
    rows = []
    for name, md in texts.items():
        note = clean_note(md, name)
        rows.append(
            {
                "note": name,
                "text": note.text,
                "sections": [s.__dict__ for s in note.sections],
                "source_version": versions.get(name, "v1"),
                "cleaner_version": "clean",
                "note_commit": "c1",
                "access": [],
            }
        )
    return pd.DataFrame(rows)


def reader(frame: pd.DataFrame, asked: list):
    def read(names):
        asked.append(sorted(names))
        return frame[frame["note"].isin(names)].reset_index(drop=True)

    return read


def test_only_the_notes_that_changed_are_rebuilt_and_read():
    strategy = STRATEGIES["fixed-500"]
    first_notes, asked = cleaned(NOTES, {}), []
    first = chunk_lane(strategy, None, first_notes, reader(first_notes, asked))
    assert asked == [["a", "b", "c"]] and first.counts["chunks_new"] == first.counts["chunks"] > 3
    assert unchecked_coverage(first.frame, first.rebuilt, strategy.overlapping) == []

    edited = cleaned({**NOTES, "b": "### B\nかわった。\n"}, {"b": "v2"})
    edited = edited[edited["note"] != "c"].reset_index(drop=True)  # c deleted
    asked = []
    again = chunk_lane(strategy, first.frame, edited, reader(edited, asked))
    assert asked == [["b"]]  # a is kept without reading its text
    assert again.changes.unchanged == ["a"] and set(again.frame["note"]) == {"a", "b"}
    kept = first.frame[first.frame["note"] == "a"]["chunk_id"].tolist()
    assert again.frame[again.frame["note"] == "a"]["chunk_id"].tolist() == kept
    # c's chunks and b's old one go, b's new one comes
    assert (again.counts["chunks_removed"], again.counts["chunks_new"]) == (
        first.counts["chunks"] - len(kept),
        1,
    )
    figures = again.figures(strategy)
    assert figures["strategy"] == "fixed-500" and figures["chunks"] == len(again.frame)

    # the kept rows are skipped: only b's are checked, against b's text alone
    assert unchecked_coverage(again.frame, again.rebuilt, False, again.changes.unchanged) == []
    broken = again.frame.assign(text=again.frame["text"].str.slice(1))
    assert unchecked_coverage(broken, again.rebuilt, False, again.changes.unchanged)  # b's row is wrong
