"""Whether a new index may be served: absolute checks on the candidate, and a comparison with the
last released state on the questions both scored.

A candidate is rejected when a unit leaked (in retrieval or in a served table), a served table
failed its recall or fill check, the release run is over a budget or no configuration is within the
budgets (`budget_problems`: as the verdict held them), evidence recall@k of the release run on the test questions dropped
by more than `max_drop` (the development questions chose the configuration: only the test ones measure
it without bias), a `critical` question the last release found within k is missed, the release run
abstains less often on unauthorized questions than before, or its answers' `faithful` score on the
test questions dropped by more than `max_faithful_drop` and significantly (a paired test on the
questions both judged by the same judge: a drop within the judge's noise does not reject; a score the
judge gives by construction is none). The first release has nothing to compare with: only the
absolute checks apply.

With fewer test questions than can decide anything (`FEWEST_TO_DECIDE`, none at RAG_TEST_SHARE=0),
the recall and the rules are on the development questions, and every line says so: never a NaN.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rag_pipeline.lib.core import UNAUTHORIZED, AnyPath
from rag_pipeline.lib.evaluation import paired_randomization, run_label
from rag_pipeline.lib.evaluation.significance import FEWEST_TO_DECIDE, p_text
from rag_pipeline.lib.judging import ppi_outcomes
from rag_pipeline.lib.questions import DEV, TEST

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
    "judge_version",
    "faithful",  # the judge's share of yes over the answer's valid repeats
    "faithful_label",  # a person's label of the answer, if any
]
SIGNIFICANT = 0.05  # the paired test's level for the faithful rule


def label_key(q: str, evidence: Sequence[dict], groups: Sequence[str] | None) -> str:
    """A question's identity for comparison: its text, its evidence and its asker's groups."""
    gold = [(e["note"], e["text"]) for e in evidence]
    payload = json.dumps([q, gold, None if groups is None else sorted(groups)], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def question_results(
    questions: pd.DataFrame,
    outcomes: pd.DataFrame,
    answers: pd.DataFrame | None,
    judged: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per scored question (`questions` as `usable` leaves them), the rank of the release run's first
    evidence (answerable ones; null when not retrieved), whether its answer abstained (unauthorized
    ones; with repeats, whether every repeat did) and, from `judged` (question_id, judge_version,
    faithful, faithful_label), its faithful score and label."""
    first = dict(zip(outcomes["question_id"].astype(str), outcomes["first_evidence_rank"]))
    abstained = (
        {}
        if answers is None
        else answers.groupby(answers["question_id"].astype(str))["abstained"].all().to_dict()
    )
    scored = {} if judged is None else {str(r.question_id): r for r in judged.itertuples(index=False)}
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
                "judge_version": getattr(scored.get(qid), "judge_version", None),
                "faithful": getattr(scored.get(qid), "faithful", float("nan")),
                "faithful_label": getattr(scored.get(qid), "faithful_label", None),
            }
        )
    frame = pd.DataFrame(rows, columns=QUESTION_COLUMNS)
    return frame.astype({"first_evidence_rank": "Int64", "faithful": "float64", "faithful_label": "boolean"})


def found(ranks: pd.Series, k: int) -> pd.Series:
    """Per question (its first evidence rank, null when not retrieved), an evidence within k."""
    return ranks.fillna(k + 1).astype(int) <= k


SPLIT_NAMES = {TEST: "test questions", DEV: "development questions (too few test questions to decide)"}


def deciding(questions: pd.DataFrame) -> tuple[np.ndarray, str]:
    """Which of `questions` (with `split`) a rule decides on: the test ones, or the development ones
    when fewer than `FEWEST_TO_DECIDE` are test; and that split."""
    test = (questions["split"] == TEST).to_numpy()
    return (test, TEST) if test.sum() >= FEWEST_TO_DECIDE else ((questions["split"] == DEV).to_numpy(), DEV)


def recall(results: pd.DataFrame, k: int) -> tuple[float, str]:
    """Evidence recall@k over the answerable questions of the split `deciding` names, and that split
    (NaN with no answerable question at all)."""
    answerable = results[results["answerable"]]
    chosen, split = deciding(answerable)
    scored = answerable[chosen]
    return (float(found(scored["first_evidence_rank"], k).mean()) if len(scored) else float("nan")), split


@dataclass
class Decision:
    decision: str
    reasons: list[str] = field(default_factory=list)
    newly_missed: list[str] = field(default_factory=list)
    recall: float = float("nan")
    recall_on: str = TEST  # the split `recall` and the rules are on
    compared: int = 0  # questions scored by both the candidate and the last release


def leak_problem(where: str, leaks: list[str], shown: int = 5) -> list[str]:
    """The leak rule's reason for many leaks: how many, and the first few."""
    if not leaks:
        return []
    more = f", and {len(leaks) - shown} more" if len(leaks) > shown else ""
    return [
        f"{where}: {len(leaks)} unit(s) leaked to an asker who may not read them ({'; '.join(leaks[:shown])}{more})"
    ]


def budget_problems(verdict_path: AnyPath, run: tuple[str, str]) -> list[str]:
    """The budgets' rule, from the verdict's `over_budget` (configuration -> each budget it is over):
    the release run (strategy, retriever) within every budget; when no configuration is, the verdict
    names the cheapest and the fastest, and so does the reason. A verdict that cannot be read fails."""
    try:
        verdict = json.loads(verdict_path.read_bytes())
    except (OSError, ValueError) as exc:
        return [f"{verdict_path}: the verdict cannot be read ({exc}); its budgets cannot be checked"]
    over, label = verdict.get("over_budget") or {}, run_label(*run)
    problems = []
    if "cheapest" in verdict:
        problems.append(
            f"no configuration is within the budgets: the cheapest is {verdict['cheapest']}, the "
            f"fastest {verdict['fastest']}".replace("`", "")
        )
    if label in over:
        figures = ", ".join(
            f"{b['budget']}={b['limit']}, measured "
            + ("unknown" if b["measured"] is None else f"{b['measured']:g}")
            for b in over[label]
        )
        problems.append(f"the release run {'/'.join(run)} is over budget ({figures})")
    return problems


def decide(
    results: pd.DataFrame,
    problems: Sequence[str],
    previous: pd.DataFrame | None,
    k: int,
    max_drop: float,
    max_faithful_drop: float = 0.05,
) -> Decision:
    """`results` (see `question_results`) of the candidate; `problems` what the absolute checks
    found (leaks, the served table's recall and fill); `previous` the last release's results;
    both are judged at `k`."""
    reasons = list(problems)
    measured, split = recall(results, k)
    decision = Decision(RELEASED, recall=measured, recall_on=split)
    if previous is not None and len(previous):
        both = results.merge(previous, on=["question_id", "label_key"], suffixes=("", "_was"))
        decision.compared = len(both)
        answerable = both[both["answerable"] & both["answerable_was"]]
        now_found = found(answerable["first_evidence_rank"], k)
        was_found = found(answerable["first_evidence_rank_was"], k)
        missed = answerable[was_found & ~now_found]
        decision.newly_missed = sorted(missed["question_id"], key=_natural)
        chosen, split = deciding(answerable)
        if chosen.any():
            now, was = float(now_found[chosen].mean()), float(was_found[chosen].mean())
            if was - now > max_drop + 1e-12:
                reasons.append(
                    f"evidence recall@k dropped from {was:.3f} to {now:.3f} on the {int(chosen.sum())} "
                    f"{SPLIT_NAMES[split]} both scored (more than RAG_RELEASE_MAX_DROP={max_drop})"
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
        reasons += faithful_drop(both, max_faithful_drop)
    decision.reasons = reasons
    decision.decision = REJECTED if reasons else RELEASED
    return decision


def faithful_drop(both: pd.DataFrame, max_drop: float) -> list[str]:
    """The faithful rule on the test questions candidate and last release both had judged by one judge:
    each side's per-question scores, corrected by its people's labels (`ppi_outcomes`: their mean is
    the PPI estimate), compared by a paired randomisation test; a drop beyond `max_drop` that the
    test finds significant rejects. A last release recorded before judging compares nothing."""
    if "faithful_was" not in both:
        return []
    judged = both[
        both["faithful"].notna()
        & both["faithful_was"].notna()
        & (both["judge_version"] == both["judge_version_was"])
    ]
    chosen, split = deciding(judged)
    shared = judged[chosen]
    if not len(shared):
        return []
    now, was = (
        ppi_outcomes(
            shared[f"faithful{s}"].to_numpy(float),
            shared[f"faithful_label{s}"].astype("Float64").to_numpy(float, na_value=np.nan),
        )
        for s in ("", "_was")
    )
    drop = float(was.mean() - now.mean())
    p = paired_randomization(now, was)
    if drop > max_drop + 1e-12 and p < SIGNIFICANT:
        return [
            f"answers' faithful fell from {was.mean():.3f} to {now.mean():.3f} on the {len(shared)} "
            f"{SPLIT_NAMES[split]} both had judged ({p_text(p)}; more than "
            f"RAG_RELEASE_MAX_FAITHFUL_DROP={max_drop})"
        ]
    return []


def _natural(question_id: str) -> tuple:
    return (0, int(question_id), "") if question_id.isdigit() else (1, 0, question_id)
