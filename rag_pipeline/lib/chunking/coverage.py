"""The `chunks_reproduce_notes` check: every chunk is its span of the note, and no text is left out."""

from __future__ import annotations


def coverage_problems(chunks: list[dict], texts: dict[str, str], overlapping: bool) -> list[str]:
    """Why a lane's chunks do not reproduce their notes: text mismatches, and gaps holding
    text (or, for a non-overlapping strategy, overlaps) between consecutive spans."""
    problems = []
    by_note: dict[str, list[dict]] = {}
    for c in chunks:
        by_note.setdefault(c["note"], []).append(c)
        if texts.get(c["note"], "")[c["start"] : c["end"]] != c["text"]:
            problems.append(
                f"chunk {c['chunk_id']} of note {c['note']!r}: text differs from [{c['start']}, {c['end']})"
            )
    for note, text in texts.items():
        spans = sorted((c["start"], c["end"]) for c in by_note.get(note, []))
        reached = 0
        for start, end in spans:
            if start < reached and not overlapping:
                problems.append(f"note {note!r}: chunks overlap at offset {start}")
            elif text[reached:start].strip():
                problems.append(f"note {note!r}: text [{reached}, {start}) is in no chunk")
            reached = max(reached, end)
        if text[reached:].strip():
            problems.append(f"note {note!r}: text [{reached}, {len(text)}) is in no chunk")
    return problems
