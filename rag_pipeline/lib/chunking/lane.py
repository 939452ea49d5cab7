"""A strategy's chunks lane as plain calls: the notes' chunks rebuilt where a note, the cleaner or
the chunker changed and kept elsewhere, what changed, and the coverage check of the rows that need it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import pandas as pd

from rag_pipeline.lib.chunking.chunkers import Strategy, chunk_cleaned_note
from rag_pipeline.lib.chunking.coverage import coverage_problems
from rag_pipeline.lib.chunking.texts import with_text_hashes
from rag_pipeline.lib.core import rebuild_by_note
from rag_pipeline.lib.core.incremental import NoteChanges

# what `chunk_lane` reads of each note: its source, cleaner and commit versions
NOTE_VERSIONS = ["note", "source_version", "cleaner_version", "note_commit"]


@dataclass
class Chunked:
    frame: pd.DataFrame  # the lane's chunks, in the notes' order
    changes: NoteChanges  # which notes were rebuilt, kept, removed
    rebuilt: list[pd.DataFrame]  # the cleaned notes read whole (those rebuilt), none when none was
    counts: dict[str, int]  # the changes' counts, and the chunks kept, new and removed

    def figures(self, strategy: Strategy) -> dict[str, object]:
        """The lane as its page shows it: the strategy, the chunks' sizes and what changed."""
        sizes = self.frame["n_chars"]
        return {
            "strategy": strategy.name,
            "chunker_version": strategy.version,
            "chars_median": int(sizes.median()) if len(sizes) else 0,
            "chars_max": int(sizes.max()) if len(sizes) else 0,
            **self.counts,
        }


def chunk_lane(
    strategy: Strategy,
    previous: pd.DataFrame | None,
    versions: pd.DataFrame,
    read_notes: Callable[[list[str]], pd.DataFrame],
) -> Chunked:
    """The chunks of the notes `versions` names (their `NOTE_VERSIONS`), the `previous` file's rows
    kept for a note whose versions and chunker are the same; `read_notes(names)` gives the cleaned
    notes `names` whole, asked only of the notes rebuilt."""
    if previous is not None and "ctx_text_hash" not in previous:  # written before chunks kept them
        previous = with_text_hashes(previous)
    rebuilt: list[pd.DataFrame] = []

    def whole(names: list[str]) -> pd.DataFrame:
        rebuilt.append(read_notes(names))
        return rebuilt[0]

    frame, changes = rebuild_by_note(
        previous,
        versions.assign(chunker_version=strategy.version),
        key=["source_version", "cleaner_version", "chunker_version"],
        build=lambda n: chunk_cleaned_note(strategy, n),
        refresh={"commit": "note_commit"},
        rows=whole,
    )
    # through lists: iterating a column of Arrow strings costs ~6 times more
    before = set() if previous is None else set(previous["chunk_id"].tolist())
    after = set(frame["chunk_id"].tolist())
    counts = changes.counts() | {
        "chunks": len(frame),
        "chunks_reused": len(after & before),
        "chunks_new": len(after - before),
        "chunks_removed": len(before - after),
    }
    return Chunked(frame, changes, rebuilt, counts)


def unchecked_coverage(
    frame: pd.DataFrame, notes: Sequence[pd.DataFrame], overlapping: bool, skip: Collection[str] = ()
) -> list[str]:
    """`coverage_problems` of the chunks of every note but those in `skip` (rows already checked
    against the same texts), against the texts of `notes` (frames of note and text)."""
    skip = set(skip)
    checked = frame[[n not in skip for n in frame["note"].tolist()]] if skip else frame
    names = ["chunk_id", "note", "start", "end", "text"]
    # from plain lists: a frame of Arrow strings is slow to turn into records row by row
    spans = [dict(zip(names, row)) for row in zip(*(checked[c].tolist() for c in names))]
    texts = {note: text for n in notes for note, text in zip(n["note"], n["text"])}
    return coverage_problems(spans, texts, overlapping)
