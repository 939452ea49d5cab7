"""The answer stage without Dagster: strict reading of the reply (`[n]` citations, `ABSTAIN`; the
prompt is `rag_pipeline.lib.answers.prompts`), scoring, the summary (its metrics are defined in
`answer_summary`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_pipeline.lib.answers.prompts import ABSTAIN, Prompt
from rag_pipeline.lib.answers.units import Unit
from rag_pipeline.lib.core import UNAUTHORIZED
from rag_pipeline.lib.evaluation import EvidenceSpan, holds
from rag_pipeline.lib.questions import Question

BASELINE_STRATEGY = "-"  # the `none` and `oracle` baselines do not depend on a chunking strategy

# answers.parquet; n_cited_holding (valid cited units holding an evidence) feeds the summary
ANSWER_COLUMNS = [
    "question_id",
    "split",
    "strategy",
    "retriever",
    "llm_version",
    "repeat",
    "answer",
    "cited",
    "abstained",
    "correct",
    "citation_valid",
    "citation_correct",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "n_cited_holding",
]

CITATION = re.compile(r"\[(\d+)\]")
# bracketed numbers in any other form ([1, 3], [1-3], [ 2 ]) break the asked form: invalid, not guessed at
CITATION_LIKE = re.compile(r"\[\s*\d[\d\s,、，\-–]*\]")


@dataclass(frozen=True)
class Reply:
    text: str  # the answer, its thinking removed
    thinking: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0


@dataclass(frozen=True)
class ParsedReply:
    answer: str
    abstained: bool
    numbers: tuple[int, ...]  # the valid citations (1-based), each once, in order of first use
    citation_valid: bool  # False when a citation names a unit not passed or breaks the `[n]` form


def parse_reply(text: str, n_units: int) -> ParsedReply:
    """Abstained: the first non-empty line is exactly ABSTAIN. Citations: every `[n]`; one naming
    a number outside 1..n_units, or a bracketed number list in another form, makes them invalid."""
    answer = text.strip()
    first = next((line.strip() for line in answer.splitlines() if line.strip()), "")
    numbers = [int(n) for n in CITATION.findall(answer)]
    valid = [n for n in dict.fromkeys(numbers) if 1 <= n <= n_units]
    malformed = len(CITATION_LIKE.findall(answer)) > len(numbers)
    return ParsedReply(
        answer=answer,
        abstained=first == ABSTAIN,
        numbers=tuple(valid),
        citation_valid=not malformed and len(valid) == len(set(numbers)),
    )


def without_citations(answer: str) -> str:
    """The answer as matched against `answer_pattern`: `[3]` must not match a pattern `3`."""
    return CITATION_LIKE.sub("", answer)


def _holds_any(unit: Unit, spans: Sequence[EvidenceSpan | None]) -> bool:
    return any(holds(unit.note, unit.start, unit.end, span) for span in filter(None, spans))


def score_answers(
    prompts: Sequence[Prompt],
    replies: Sequence[Reply],
    questions: Sequence[Question],
    spans: dict[str, list[EvidenceSpan | None]],
    *,
    strategy: str,
    retriever: str,
    llm_version: str,
    repeat: int = 0,
) -> pd.DataFrame:
    """One answers.parquet row per prompt and its reply (to its `repeat`-th asking), in the order given.

    `correct`: the pattern found (re.search) in the answer without its citations, and not abstained;
    null without a pattern. `citation_correct`: every valid cited unit holds an evidence of the
    question (metrics.holds); null when nothing is cited or the question has no evidence.
    `n_cited_holding` (for the summary): how many valid cited units hold an evidence.
    """
    by_id = {str(q.id): q for q in questions}
    rows = []
    for prompt, reply in zip(prompts, replies, strict=True):
        q = by_id.get(prompt.question_id)
        if q is None:
            raise ValueError(f"answers: question {prompt.question_id} is not among the questions")
        parsed = parse_reply(reply.text, len(prompt.units))
        cited = [prompt.units[n - 1] for n in parsed.numbers]
        holding = [_holds_any(u, spans.get(prompt.question_id, [])) for u in cited]
        correct = None
        if q.answer_pattern is not None:
            try:
                found = re.search(q.answer_pattern, without_citations(parsed.answer))
            except re.error as exc:
                raise ValueError(
                    f"question {q.id}: invalid answer_pattern {q.answer_pattern!r}: {exc}"
                ) from None
            correct = not parsed.abstained and found is not None
        rows.append(
            {
                "question_id": prompt.question_id,
                "split": q.split,
                "strategy": strategy,
                "retriever": retriever,
                "llm_version": llm_version,
                "repeat": repeat,
                "answer": parsed.answer,
                "cited": [u.chunk_id for u in cited],
                "abstained": parsed.abstained,
                "correct": correct,
                "citation_valid": parsed.citation_valid,
                "citation_correct": all(holding) if cited and q.answerable else None,
                "latency_s": float(reply.latency_s),
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "n_cited_holding": sum(holding),
            }
        )
    frame = pd.DataFrame(rows, columns=ANSWER_COLUMNS)
    for col in ("correct", "citation_correct"):
        frame[col] = frame[col].astype("boolean")
    for col in ("prompt_tokens", "completion_tokens"):
        frame[col] = frame[col].astype("Int64")
    return frame


def _share(flags: pd.Series) -> float:
    return float(flags.astype(bool).mean()) if len(flags) else float("nan")


def answer_summary(answers: pd.DataFrame, questions: Sequence[Question]) -> pd.DataFrame:
    """One row per (strategy, retriever, llm_version). Questions fall in three disjoint groups:
    unauthorized (category `unauthorized`), answerable (with evidence) and unanswerable (without).

    - n_questions: questions answered in the run (each once, however often it was asked: with
      RAG_ANSWER_REPEATS the other measures pool every repeat).
    - accuracy: answerable questions with an answer_pattern whose answer matches it and that did
      not abstain / answerable questions with an answer_pattern.
    - citation_precision: valid cited units holding an evidence of their question / all valid
      cited units, pooled over every question of the run (NaN when nothing is cited).
    - citation_recall: answerable questions where some cited unit holds an evidence / answerable questions.
    - abstain_unanswerable: unanswerable questions declined / unanswerable questions.
    - abstain_unauthorized: unauthorized questions declined / unauthorized questions (NaN when none).
    - false_abstain: answerable questions declined / answerable questions.
    - latency_p50_s, latency_p95_s: percentiles (linear) of the per-question latency, as first measured.
    """
    info = pd.DataFrame(
        {
            "question_id": [str(q.id) for q in questions],
            "group": [
                UNAUTHORIZED
                if q.category == UNAUTHORIZED
                else "answerable"
                if q.answerable
                else "unanswerable"
                for q in questions
            ],
            "has_pattern": [q.answer_pattern is not None for q in questions],
        }
    )
    frame = answers.merge(info, on="question_id", how="left", validate="many_to_one")
    unknown = frame.loc[frame["group"].isna(), "question_id"]
    if len(unknown):
        raise ValueError(f"answer summary: question {unknown.iloc[0]} is not among the questions")
    rows = []
    for (strategy, retriever, version), run in frame.groupby(
        ["strategy", "retriever", "llm_version"], sort=False
    ):
        answerable = run[run["group"] == "answerable"]
        patterned = answerable[answerable["has_pattern"]]
        n_cited = int(run["cited"].map(len).sum())
        latency = run["latency_s"].to_numpy(dtype=float)
        rows.append(
            {
                "strategy": strategy,
                "retriever": retriever,
                "llm_version": version,
                "n_questions": run["question_id"].nunique(),
                "accuracy": _share(patterned["correct"].fillna(False)),
                "citation_precision": float(run["n_cited_holding"].sum() / n_cited)
                if n_cited
                else float("nan"),
                "citation_recall": _share(answerable["n_cited_holding"] > 0),
                "abstain_unanswerable": _share(run.loc[run["group"] == "unanswerable", "abstained"]),
                "abstain_unauthorized": _share(run.loc[run["group"] == UNAUTHORIZED, "abstained"]),
                "false_abstain": _share(answerable["abstained"]),
                "latency_p50_s": float(np.percentile(latency, 50)) if len(latency) else float("nan"),
                "latency_p95_s": float(np.percentile(latency, 95)) if len(latency) else float("nan"),
            }
        )
    return pd.DataFrame(rows)


# the answer summary as people read it: short column names, the key below, no llm_version (it is in
# the provenance, once)
SHORT = {
    "n_questions": "n",
    "accuracy": "acc",
    "citation_precision": "cite P",
    "citation_recall": "cite R",
    "abstain_unanswerable": "abst U",
    "abstain_unauthorized": "abst X",
    "false_abstain": "false abst",
    "latency_p50_s": "p50 s",
    "latency_p95_s": "p95 s",
}
SHORT_KEY = (
    "Key: `run` strategy/retriever (`none`: no context, `oracle`: the gold sections); `acc` answers "
    "matching their pattern; `cite P`/`cite R` citation precision and recall; `abst U`/`abst X` "
    "abstentions on unanswerable/unauthorized questions; `false abst` abstentions on answerable ones; "
    "`p50 s`, `p95 s` latency per answer (median, 95th percentile)."
)


def answer_table(summary: pd.DataFrame) -> pd.DataFrame:
    """`answer_summary` with short column names, one `run` column and no llm_version."""
    runs = [
        r if s == BASELINE_STRATEGY else f"{s}/{r}" for s, r in zip(summary["strategy"], summary["retriever"])
    ]
    return summary[list(SHORT)].rename(columns=SHORT).assign(run=runs)[["run", *SHORT.values()]]
