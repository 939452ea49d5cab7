"""Retrieval metrics at the note and evidence level.

A chunk *holds* an evidence when it belongs to the evidence's note and covers at
least half of the evidence span. Everything is derived from first ranks (1-based,
None when not retrieved), so one code path serves hit@k, macro and micro recall,
MRR and the per-question tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_pipeline.lib.core import UNAUTHORIZED, may_read
from rag_pipeline.lib.questions import Question

MAX_K = 20  # the k of recall@k, MRR@k, nDCG@k
DEPTH = 50  # ranks kept per question: deep enough for candidate recall and the larger budgets
REPORT_KS = (1, 3, 5, 10)
BUDGETS = (1000, 2000, 4000, 8000)
HEADLINE_BUDGET = 2000  # the verdict's measure: evidence recall within this many characters
HEADLINE = f"r@{HEADLINE_BUDGET // 1000}k"  # its column in the configuration table
# (strategy, retriever) every configuration is compared with; a run named by its strategy alone is
# this retriever's (`fixed-1000` is `fixed-1000/dense`)
BASELINE_RUN = ("fixed-1000", "dense")

EvidenceSpan = tuple[str, int, int]  # note, start, end


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


def relevant_counts(spans: dict[str, list[EvidenceSpan | None]], units: pd.DataFrame) -> dict[str, int]:
    """Per question, how many units (chunks or parent sections: note, start, end) hold an evidence."""
    by_note = {note: group for note, group in units.groupby("note")}
    counts = {}
    for qid, evidence in spans.items():
        held: set[int] = set()
        for span in filter(None, evidence):
            group = by_note.get(span[0])
            if group is not None:
                held.update(
                    i for i, c in zip(group.index, group.itertuples()) if holds(c.note, c.start, c.end, span)
                )
        counts[qid] = len(held)
    return counts


def relevant_column(
    retrieval: pd.DataFrame, spans: dict[str, list[EvidenceSpan | None]], chunks: pd.DataFrame
) -> list[int]:
    """Per retrieval row, how many units of its kind hold an evidence of its question: chunks, or
    for `+parent` configurations the parent sections (the ideal ranking nDCG compares with)."""
    # only the notes an evidence is in: grouping every note would cost the corpus
    asked = {span[0] for evidence in spans.values() for span in evidence if span}
    chunks = chunks[[n in asked for n in chunks["note"].tolist()]]  # a list: isin over Arrow strings is slow
    parents = chunks[["note", "parent_start", "parent_end"]].drop_duplicates().reset_index(drop=True)
    relevant = {
        False: relevant_counts(spans, chunks),
        True: relevant_counts(spans, parents.rename(columns={"parent_start": "start", "parent_end": "end"})),
    }
    return [
        relevant["+parent" in r].get(q, 0) for q, r in zip(retrieval["question_id"], retrieval["retriever"])
    ]


def question_outcomes(
    questions: list[Question],
    spans: dict[str, list[EvidenceSpan | None]],
    retrieval: pd.DataFrame,
) -> pd.DataFrame:
    """One row per question of one run: first ranks of its note and of each evidence, the ranks
    of every unit holding an evidence, and cumulative characters passed at k = 1..DEPTH.

    `retrieval` has question_id, rank, n_relevant and, for the unit passed, note, start, end, n_chars.
    """
    ordered = retrieval.sort_values(["question_id", "rank"], kind="stable")
    groups = ordered.groupby("question_id", sort=False).indices
    notes_all = ordered["note"].to_numpy()
    starts_all, ends_all = ordered["start"].to_numpy(), ordered["end"].to_numpy()
    chars_all = ordered["n_chars"].to_numpy()
    n_relevant_all = ordered["n_relevant"].to_numpy() if "n_relevant" in ordered else None
    access_all = ordered["access"].tolist() if "access" in ordered else [[]] * len(ordered)
    n_readable_all = ordered["n_readable"].to_numpy() if "n_readable" in ordered else None
    rows = []
    for q in questions:
        at = groups.get(str(q.id), np.array([], dtype=int))[:DEPTH]
        notes, starts, ends = notes_all[at], starts_all[at], ends_all[at]
        # per evidence (None: not located in its note), which retrieved units hold it
        held = [
            (notes == span[0])
            & ((np.minimum(ends, span[2]) - np.maximum(starts, span[1])) * 2 >= span[2] - span[1])
            if span
            else np.zeros(len(at), dtype=bool)
            for span in spans.get(str(q.id), [])
        ]
        ev_ranks = [int(np.argmax(h)) + 1 if h.any() else None for h in held]
        relevant = (np.flatnonzero(np.any(held, axis=0)) + 1).tolist() if held else []
        note_hits = np.flatnonzero(np.isin(notes, [ev.note for ev in q.evidence]))
        chars = np.cumsum(chars_all[at])
        chars = np.concatenate([chars, np.full(DEPTH - len(chars), chars[-1] if len(chars) else 0)])
        found = [r for r in ev_ranks if r is not None]
        rows.append(
            {
                "question_id": str(q.id),
                "category": q.category,
                "source": q.source,
                "split": q.split,
                "answerable": q.answerable,
                "n_evidence": len(q.evidence),
                "note_rank": int(note_hits[0]) + 1 if len(note_hits) else None,
                "evidence_ranks": ev_ranks,
                "first_evidence_rank": min(found) if found else None,
                "relevant_ranks": relevant,
                "n_relevant": int(n_relevant_all[at[0]])
                if n_relevant_all is not None and len(at)
                else len(relevant),
                "chars_at": chars.astype(np.int64).tolist(),
                # access: where a unit the asker may not read was passed, and whether fewer than k
                # units came back although k readable ones exist
                "leak_ranks": [r + 1 for r, i in enumerate(at) if not may_read(q.groups, access_all[i])],
                "n_returned": len(at),
                "n_readable": int(n_readable_all[at[0]])
                if n_readable_all is not None and len(at)
                else len(at),
            }
        )
    frame = pd.DataFrame(rows)
    for col in ("note_rank", "first_evidence_rank"):
        frame[col] = frame[col].astype("Int64")
    return frame


def ndcg_at(relevant_ranks: Sequence[int], n_relevant: int, k: int) -> float:
    """Binary-gain nDCG@k: every unit holding an evidence has gain 1."""
    ideal = sum(1 / np.log2(i + 1) for i in range(1, min(k, n_relevant) + 1))
    return sum(1 / np.log2(r + 1) for r in relevant_ranks if r <= k) / ideal if ideal else 0.0


def _answerable(outcomes: pd.DataFrame) -> pd.DataFrame:
    return outcomes[outcomes["answerable"].astype(bool)]


def chars_matrix(outcomes: pd.DataFrame) -> np.ndarray:
    """Characters passed at k = 1..DEPTH, one row per question (an empty set of questions gives no rows)."""
    if outcomes.empty:
        return np.zeros((0, DEPTH))
    return np.array(outcomes["chars_at"].tolist(), dtype=float).reshape(len(outcomes), -1)


def first_ranks_of(outcomes: pd.DataFrame) -> np.ndarray:
    """First evidence ranks as floats, inf where the evidence was not retrieved."""
    return outcomes["first_evidence_rank"].astype("Float64").to_numpy(dtype=float, na_value=np.inf)


def summarize(outcomes: pd.DataFrame, ks: Sequence[int] = range(1, MAX_K + 1)) -> pd.DataFrame:
    """Per-k table for one run's question outcomes (answerable questions only)."""
    scored = _answerable(outcomes)
    ev_ranks = [[None if pd.isna(x) else int(x) for x in r] for r in scored["evidence_ranks"]]
    note_ranks = [[None if pd.isna(r) else int(r)] for r in scored["note_rank"]]
    first = first_ranks_of(scored)
    chars = chars_matrix(scored)
    relevant = list(zip(scored["relevant_ranks"], scored["n_relevant"]))
    counts = question_counts(outcomes)
    access = AccessColumns.of(outcomes)
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
                "ndcg": float(np.mean([ndcg_at(list(r), int(n), k) for r, n in relevant]))
                if relevant
                else float("nan"),
                "chars_median": float(np.median(chars[:, k - 1])) if len(chars) else float("nan"),
                "n_questions": len(scored),
                **counts,
                **access.at(k),
            }
        )
    return pd.DataFrame(rows)


def leak_ranks(outcomes: pd.DataFrame) -> np.ndarray:
    """Every rank, over the run's questions, at which a unit the asker may not read was passed."""
    if "leak_ranks" not in outcomes or outcomes.empty:
        return np.zeros(0, np.int64)
    return np.array([r for ranks in outcomes["leak_ranks"] for r in ranks], np.int64)


@dataclass(frozen=True)
class AccessColumns:
    """What `access_at` reads of a run, as arrays: read once for every k."""

    leaks: np.ndarray | None  # None: the run has no access columns
    returned: np.ndarray
    readable: np.ndarray

    @classmethod
    def of(cls, outcomes: pd.DataFrame) -> AccessColumns:
        if "leak_ranks" not in outcomes or outcomes.empty:
            return cls(None, np.zeros(0), np.zeros(0))
        return cls(leak_ranks(outcomes), outcomes["n_returned"].to_numpy(), outcomes["n_readable"].to_numpy())

    def at(self, k: int) -> dict[str, float]:
        if self.leaks is None:
            return {"leaked_units": 0, "underfilled": float("nan")}
        short = (self.returned < k) & (self.readable >= k)
        return {"leaked_units": int((self.leaks <= k).sum()), "underfilled": float(short.mean())}


def access_at(outcomes: pd.DataFrame, k: int) -> dict[str, float]:
    """Over every question of a run: units passed at k that the asker may not read (must be 0), and
    the share of questions given fewer than k units although k readable units exist."""
    return AccessColumns.of(outcomes).at(k)


def question_counts(outcomes: pd.DataFrame) -> dict[str, int]:
    """Questions kept apart from recall: without evidence, and about notes the asker may not read."""
    unauthorized = outcomes["category"] == UNAUTHORIZED
    return {
        "n_unanswerable": int((~outcomes["answerable"].astype(bool) & ~unauthorized).sum()),
        "n_unauthorized": int(unauthorized.sum()),
    }


def hits_within(outcomes: pd.DataFrame, budget: int) -> np.ndarray:
    """Per answerable question: is an evidence among the top units that fit in `budget` characters?"""
    scored = _answerable(outcomes)
    chars = chars_matrix(scored)
    fit = (chars <= budget).sum(axis=1)
    return first_ranks_of(scored) <= fit


def context_recall(outcomes: pd.DataFrame, context_k: int, context_chars: int) -> float:
    """Share of answerable questions whose evidence would reach the LLM: among the first
    `context_k` units, and within `context_chars` characters."""
    scored = _answerable(outcomes)
    chars = chars_matrix(scored)
    fit = np.minimum((chars <= context_chars).sum(axis=1), context_k)
    return float((first_ranks_of(scored) <= fit).mean()) if len(scored) else float("nan")


def budget_recall(outcomes: pd.DataFrame, budgets: Sequence[int] = BUDGETS) -> pd.DataFrame:
    """Evidence recall when the LLM may read `budget` characters: the fair comparison across chunk sizes."""
    return pd.DataFrame(
        {"budget_chars": b, "evidence_recall": float(hits_within(outcomes, b).mean())} for b in budgets
    )


def category_recall(outcomes: pd.DataFrame, ks: Sequence[int] = (1, 5, 10)) -> pd.DataFrame:
    rows = []
    for category, group in _answerable(outcomes).groupby("category"):
        first = first_ranks_of(group)
        rows += [
            {
                "category": category,
                "k": k,
                "evidence_recall": float((first <= k).mean()),
                "n_questions": len(group),
            }
            for k in ks
        ]
    return pd.DataFrame(rows)
