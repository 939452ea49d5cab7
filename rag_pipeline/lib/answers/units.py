"""The units an answer prompt passes: a retriever run's leading units within the context budget, or,
for the `oracle` baseline, the heading sections holding the gold evidence (`none` passes nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from rag_pipeline.lib.core import may_read
from rag_pipeline.lib.evaluation import EvidenceSpan
from rag_pipeline.lib.questions import Question

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


Run = tuple[str, str]  # (strategy, retriever); the baselines' strategy is BASELINE_STRATEGY


def prompt_units(
    questions: Sequence[Question],
    spans: dict[str, list[EvidenceSpan | None]],
    cleaned_notes: pd.DataFrame,
    ranked: dict[Run, pd.DataFrame],
    context_k: int,
    context_chars: int,
    baseline_strategy: str,
) -> dict[Run, dict[str, list[Unit]]]:
    """Per run, per question, the units its prompt passes: nothing (`none`), the gold sections the
    asker may read (`oracle`, none for an unauthorized question), and each retriever run's leading
    units. A unit of a note that is gone, or that its asker may not read, is refused: the retrieval
    would be older than the notes, and the prompt would hold text it must not."""
    texts = dict(zip(cleaned_notes["note"], cleaned_notes["text"]))
    access = dict(zip(cleaned_notes["note"], cleaned_notes["access"]))
    ids = [str(q.id) for q in questions]
    units: dict[Run, dict[str, list[Unit]]] = {(baseline_strategy, NONE): {q: [] for q in ids}}
    units[(baseline_strategy, ORACLE)] = {
        str(q.id): [
            u for u in oracle_units(spans[str(q.id)], cleaned_notes) if may_read(q.groups, access[u.note])
        ]
        for q in questions
    }
    for (strategy, retriever), frame in ranked.items():
        gone = sorted(set(frame["note"]) - set(texts))
        if gone:
            raise ValueError(f"retrieval of {strategy} names notes that are gone ({', '.join(gone)})")
        run = context_units(frame, texts, context_k, context_chars)
        units[(strategy, retriever)] = {q: run.get(q, []) for q in ids}
    groups = {str(q.id): q.groups for q in questions}
    for (strategy, retriever), by_question in units.items():
        for qid, passed in by_question.items():
            for unit in passed:
                if not may_read(groups[qid], access[unit.note]):
                    raise ValueError(
                        f"question {qid} ({strategy}/{retriever}): its asker may not read note {unit.note!r}; "
                        "prompt refused"
                    )
    return units
