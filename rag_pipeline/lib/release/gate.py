"""Whether a new index may be served: absolute checks on the candidate, and a comparison with the
last released state on the questions both scored.

A candidate is rejected when a unit leaked (in retrieval or in a served table), a served table
failed its recall or fill check, evidence recall@k of the release run on the test questions dropped
by more than `max_drop` (the development questions chose the configuration: only the test ones measure
it without bias), a `critical` question the last release found within k is missed, or the release run
abstains less often on unauthorized questions than before. The first release has nothing to
compare with: only the absolute checks apply.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rag_pipeline.lib.core import UNAUTHORIZED
from rag_pipeline.lib.questions import TEST

RELEASED, REJECTED = "released", "rejected"
# release/questions.parquet: per question, what the release run did (the rank, so that a later
# decision under another RAG_RELEASE_K compares at its own k)
QUESTION_COLUMNS = [
    "question_id",
    "label_key",
    "split",
    "critical",
    "answerable",
    "unauthorized",
    "first_evidence_rank",
    "abstained",
]


def label_key(q: str, evidence: Sequence[dict], groups: Sequence[str] | None) -> str:
    """A question's identity for comparison: its text, its evidence and its asker's groups."""
    gold = [(e["note"], e["text"]) for e in evidence]
    payload = json.dumps([q, gold, None if groups is None else sorted(groups)], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def question_results(
    questions: pd.DataFrame, outcomes: pd.DataFrame, answers: pd.DataFrame | None
) -> pd.DataFrame:
    """Per scored question (`questions` as `usable` leaves them), the rank of the release run's first
    evidence (answerable ones; null when not retrieved) and whether its answer abstained
    (unauthorized ones)."""
    first = dict(zip(outcomes["question_id"].astype(str), outcomes["first_evidence_rank"]))
    abstained = {} if answers is None else dict(zip(answers["question_id"].astype(str), answers["abstained"]))
    rows = []
    for row in questions.itertuples(index=False):
        qid = str(row.question_id)
        groups = None if row.groups is None else list(row.groups)
        evidence = [] if row.evidence is None else list(row.evidence)
        rank = first.get(qid)
        unauthorized = row.category == UNAUTHORIZED
        rows.append(
            {
                "question_id": qid,
                "label_key": label_key(row.q, evidence, groups),
                "split": row.split,
                "critical": bool(getattr(row, "critical", False)),
                "answerable": bool(row.answerable),
                "unauthorized": unauthorized,
                "first_evidence_rank": None
                if not row.answerable or rank is None or pd.isna(rank)
                else int(rank),
                "abstained": abstained.get(qid) if unauthorized else None,
            }
        )
    frame = pd.DataFrame(rows, columns=QUESTION_COLUMNS)
    return frame.astype({"first_evidence_rank": "Int64"})


def found(ranks: pd.Series, k: int) -> pd.Series:
    """Per question (its first evidence rank, null when not retrieved), an evidence within k."""
    return ranks.fillna(k + 1).astype(int) <= k


def recall(results: pd.DataFrame, k: int) -> float:
    """Evidence recall@k over the answerable test questions (NaN with none)."""
    scored = results[results["answerable"] & (results["split"] == TEST)]
    return float(found(scored["first_evidence_rank"], k).mean()) if len(scored) else float("nan")


@dataclass
class Decision:
    decision: str
    reasons: list[str] = field(default_factory=list)
    newly_missed: list[str] = field(default_factory=list)
    recall: float = float("nan")
    compared: int = 0  # questions scored by both the candidate and the last release


def decide(
    results: pd.DataFrame,
    problems: Sequence[str],
    previous: pd.DataFrame | None,
    k: int,
    max_drop: float,
) -> Decision:
    """`results` (see `question_results`) of the candidate; `problems` what the absolute checks
    found (leaks, the served table's recall and fill); `previous` the last release's results;
    both are judged at `k`."""
    reasons = list(problems)
    decision = Decision(RELEASED, recall=recall(results, k))
    if previous is not None and len(previous):
        both = results.merge(previous, on=["question_id", "label_key"], suffixes=("", "_was"))
        decision.compared = len(both)
        answerable = both[both["answerable"] & both["answerable_was"]]
        now_found = found(answerable["first_evidence_rank"], k)
        was_found = found(answerable["first_evidence_rank_was"], k)
        missed = answerable[was_found & ~now_found]
        decision.newly_missed = sorted(missed["question_id"], key=_natural)
        test = (answerable["split"] == TEST).to_numpy()
        if test.any():
            now, was = float(now_found[test].mean()), float(was_found[test].mean())
            if was - now > max_drop + 1e-12:
                reasons.append(
                    f"evidence recall@k dropped from {was:.3f} to {now:.3f} on the {int(test.sum())} "
                    f"test questions both scored (more than RAG_RELEASE_MAX_DROP={max_drop})"
                )
        critical = sorted(missed.loc[missed["critical"], "question_id"], key=_natural)
        if critical:
            reasons.append(
                f"critical question(s) {', '.join(critical)} found by the last release, now missed"
            )
        refused = both[both["unauthorized"] & both["abstained"].notna() & both["abstained_was"].notna()]
        if len(refused):
            now, was = (float(np.mean(refused[c].astype(bool))) for c in ("abstained", "abstained_was"))
            if now < was:
                reasons.append(
                    f"answers abstain on {now:.0%} of the {len(refused)} unauthorized questions, "
                    f"the last release on {was:.0%}"
                )
    decision.reasons = reasons
    decision.decision = REJECTED if reasons else RELEASED
    return decision


def _natural(question_id: str) -> tuple:
    return (0, int(question_id), "") if question_id.isdigit() else (1, 0, question_id)
