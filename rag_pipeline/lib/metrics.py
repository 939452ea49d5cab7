"""Retrieval metrics at the note and evidence level (seeds 000 and 001).

A chunk *holds* an evidence when it belongs to the evidence's note and covers at
least half of the evidence span. Everything is derived from first ranks (1-based,
None when not retrieved), so one code path serves hit@k, macro and micro recall,
MRR and the per-question tables.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from rag_pipeline.lib.questions import Question

MAX_K = 20
REPORT_KS = (1, 3, 5, 10)

EvidenceSpan = tuple[str, int, int]  # note, start, end


def first_ranks(gold: set[Hashable], ranked: Sequence[Hashable]) -> list[int | None]:
    """For each gold item (sorted), the 1-based rank where `ranked` first lists it."""
    pos = {}
    for r, item in enumerate(ranked, 1):
        pos.setdefault(item, r)
    return [pos.get(g) for g in sorted(gold, key=str)]


def recall_at_k(ranks: Sequence[Sequence[int | None]], k: int) -> dict[str, float]:
    """macro: mean per-question share of gold found; hit: share of questions with any gold
    found; micro: all gold found / all gold. Questions with no gold are left out."""
    scored = [r for r in ranks if len(r)]
    if not scored:
        return {"macro": float("nan"), "hit": float("nan"), "micro": float("nan")}
    found = [sum(x is not None and x <= k for x in r) for r in scored]
    return {
        "macro": float(np.mean([f / len(r) for f, r in zip(found, scored)])),
        "hit": float(np.mean([f > 0 for f in found])),
        "micro": sum(found) / sum(len(r) for r in scored),
    }


def holds(chunk_note: str, start: int, end: int, span: EvidenceSpan) -> bool:
    note, ev_start, ev_end = span
    overlap = min(end, ev_end) - max(start, ev_start)
    return chunk_note == note and overlap * 2 >= ev_end - ev_start


def question_outcomes(
    questions: list[Question],
    spans: dict[str, list[EvidenceSpan | None]],
    retrieval: pd.DataFrame,
) -> pd.DataFrame:
    """One row per question: first ranks of its note and of each evidence, and cumulative
    characters passed at k = 1..MAX_K.

    `retrieval` has question_id, rank and, for the retrieved chunk, note, start, end, n_chars.
    """
    ranked = {qid: run.sort_values("rank").head(MAX_K) for qid, run in retrieval.groupby("question_id")}
    empty = retrieval.iloc[:0]
    rows = []
    for q in questions:
        hits = ranked.get(str(q.id), empty)
        notes = {ev.note for ev in q.evidence}
        chars = np.cumsum(hits["n_chars"].to_numpy())
        chars = np.concatenate([chars, np.full(MAX_K - len(chars), chars[-1] if len(chars) else 0)])
        ev_ranks: list[int | None] = []
        for span in spans.get(str(q.id), []):
            found = (
                [r for r, c in enumerate(hits.itertuples(), 1) if holds(c.note, c.start, c.end, span)]
                if span
                else []
            )
            ev_ranks.append(found[0] if found else None)
        note_hits = [r for r, n in enumerate(hits["note"], 1) if n in notes]
        found_ranks = [r for r in ev_ranks if r is not None]
        rows.append(
            {
                "question_id": str(q.id),
                "category": q.category,
                "answerable": q.answerable,
                "n_evidence": len(q.evidence),
                "note_rank": note_hits[0] if note_hits else None,
                "evidence_ranks": ev_ranks,
                "first_evidence_rank": min(found_ranks) if found_ranks else None,
                "chars_at": chars.astype(np.int64).tolist(),
            }
        )
    frame = pd.DataFrame(rows)
    for col in ("note_rank", "first_evidence_rank"):
        frame[col] = frame[col].astype("Int64")
    return frame


def summarize(outcomes: pd.DataFrame, ks: Sequence[int] = range(1, MAX_K + 1)) -> pd.DataFrame:
    """Per-k recall table for one run's question outcomes (answerable questions only)."""
    scored = outcomes[outcomes["answerable"]]
    ev_ranks = [[None if pd.isna(x) else int(x) for x in r] for r in scored["evidence_ranks"]]
    note_ranks = [[None if pd.isna(r) else int(r)] for r in scored["note_rank"]]
    first = scored["first_evidence_rank"].astype("Float64").to_numpy(dtype=float, na_value=np.inf)
    chars = np.array(scored["chars_at"].tolist()).reshape(len(scored), MAX_K)
    rows = []
    for k in ks:
        ev = recall_at_k(ev_ranks, k)
        rows.append(
            {
                "k": k,
                "note_recall": recall_at_k(note_ranks, k)["hit"],
                "evidence_recall": ev["hit"],
                "evidence_macro_recall": ev["macro"],
                "evidence_micro_recall": ev["micro"],
                "mrr": float(np.mean(np.where(first <= k, 1.0 / first, 0.0))) if len(first) else float("nan"),
                "chars_median": float(np.median(chars[:, k - 1])) if len(chars) else float("nan"),
                "n_questions": len(scored),
                "n_unanswerable": int((~outcomes["answerable"]).sum()),
            }
        )
    return pd.DataFrame(rows)
