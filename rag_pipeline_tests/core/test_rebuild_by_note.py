"""rebuild_by_note: an edit keeps the other notes' rows and splices the rebuilt ones in note order,
giving exactly the frame a full rebuild gives, whatever was edited, added, removed or reordered."""

import pandas as pd
import pytest

from rag_pipeline.lib.core import incremental, rebuild_by_note

KEY = ["version"]


def notes_frame(names: list[str], versions: dict[str, str] | None = None) -> pd.DataFrame:
    versions = versions or {}
    return pd.DataFrame(
        {
            "note": names,
            "version": [versions.get(n, "v1") for n in names],
            "commit": ["c2"] * len(names),
        }
    )


def build(note: dict) -> list[dict]:
    parts = 1 + sum(map(ord, note["note"])) % 3  # one to three rows per note
    return [
        {"note": note["note"], "part": i, "version": note["version"], "commit": note["commit"]}
        for i in range(parts)
    ]


def from_scratch(notes: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame([row for note in notes.to_dict("records") for row in build(note)])


NAMES = [f"n{i:02d}" for i in range(30)]


@pytest.mark.parametrize(
    "names, versions",
    [
        (NAMES, {"n07": "v2"}),  # one note edited
        ([*NAMES[:12], "added", *NAMES[12:]], {}),  # one added in the middle
        (["first", *NAMES], {}),  # one added in front
        (NAMES[:5] + NAMES[6:], {"n20": "v2"}),  # one removed, one edited
        (NAMES[::-1], {}),  # every note moved
        (NAMES, {n: "v2" for n in NAMES[::2]}),  # many edited: past MAX_PIECES
        (NAMES, {}),  # nothing changed
    ],
)
def test_an_incremental_rebuild_equals_a_full_one(names, versions, monkeypatch):
    monkeypatch.setattr(incremental, "MAX_PIECES", 12)
    previous = from_scratch(notes_frame(NAMES)).assign(commit="c1")
    notes = notes_frame(names, versions)
    frame, changes = rebuild_by_note(previous, notes, KEY, build, refresh={"commit": "commit"})
    assert frame.equals(from_scratch(notes))
    assert set(changes.changed) == {n for n in versions if n in NAMES}


def test_whole_rows_are_read_for_the_rebuilt_notes_only():
    previous = from_scratch(notes_frame(NAMES)).assign(commit="c1")
    whole = notes_frame(NAMES, {"n07": "v2", "n21": "v2"}).assign(body=lambda f: f["note"] + " text")
    asked: list[list[str]] = []

    def rows(names: list[str]) -> pd.DataFrame:
        asked.append(names)
        return whole[whole["note"].isin(names)]

    def build_whole(note: dict) -> list[dict]:
        assert note["body"] == note["note"] + " text"  # given the whole row
        return build(note)

    versions = whole.drop(columns="body")
    frame, _ = rebuild_by_note(previous, versions, KEY, build_whole, refresh={"commit": "commit"}, rows=rows)
    assert asked == [["n07", "n21"]] and frame.equals(from_scratch(versions))
    asked.clear()
    rebuild_by_note(frame, versions, KEY, build_whole, refresh={"commit": "commit"}, rows=rows)
    assert asked == []  # nothing to rebuild, nothing read
