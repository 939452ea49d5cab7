"""The units an answer prompt passes: a retriever run's leading units within the context budget, or,
for the `oracle` baseline, the heading sections holding the gold evidence (`none` passes nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from rag_pipeline.lib.evaluation import EvidenceSpan

NONE, ORACLE = "none", "oracle"  # the two baseline retrievers


@dataclass(frozen=True)
class Unit:
    """One passage handed to the answerer: a chunk, a parent section or an oracle section."""

    chunk_id: str
    note: str
    start: int
    end: int
    text: str


def context_units(
    ranked: pd.DataFrame, texts: dict[str, str], context_k: int, context_chars: int
) -> dict[str, list[Unit]]:
    """Per question, the units one retriever run passes: the leading ranks while their characters
    add up to at most `context_chars`, and at most `context_k` of them (the rule of
    `metrics.context_recall`). `ranked` has question_id, rank, chunk_id, note, start, end, n_chars."""
    out: dict[str, list[Unit]] = {}
    for qid, group in ranked.sort_values(["question_id", "rank"], kind="stable").groupby("question_id"):
        fit = int((group["n_chars"].cumsum() <= context_chars).sum())
        out[str(qid)] = [
            Unit(str(r.chunk_id), r.note, int(r.start), int(r.end), texts[r.note][int(r.start) : int(r.end)])
            for r in group.head(min(fit, context_k)).itertuples(index=False)
        ]
    return out


def oracle_units(spans: Sequence[EvidenceSpan | None], cleaned_notes: pd.DataFrame) -> list[Unit]:
    """The `oracle` baseline's units: for each located evidence span, the heading sections of its
    note that the span overlaps (usually one), as one unit. `cleaned_notes` has note, text, sections."""
    notes = cleaned_notes.set_index("note")
    units: list[Unit] = []
    for note, start, end in filter(None, spans):
        if note not in notes.index:
            raise ValueError(f"oracle units: note {note!r} is not among the cleaned notes")
        text, sections = notes.at[note, "text"], notes.at[note, "sections"]
        covering = sorted(
            (s for s in sections if s["start"] < end and s["end"] > start), key=lambda s: s["start"]
        )
        if not covering:
            raise ValueError(f"oracle units: note {note!r} has no section over characters {start}-{end}")
        u_start, u_end = int(covering[0]["start"]), int(covering[-1]["end"])
        unit = Unit(f"{ORACLE}:{note}:{u_start}-{u_end}", note, u_start, u_end, text[u_start:u_end])
        if unit not in units:
            units.append(unit)
    return units
