"""What is judged: one `Item` per answers.parquet row, holding only what its question's asker may read."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rag_pipeline.lib.answers import Unit
from rag_pipeline.lib.core import UNAUTHORIZED, may_read
from rag_pipeline.lib.questions import Question

ANSWERABLE, UNANSWERABLE = "answerable", "unanswerable"  # and UNAUTHORIZED, the question category
KEY = ["question_id", "strategy", "retriever", "llm_version"]  # an item; its answer repeats are one item


@dataclass(frozen=True)
class Item:
    """One answer to judge and what its judge may see: nothing its asker may not read."""

    question_id: str
    split: str  # dev or test
    strategy: str
    retriever: str
    llm_version: str
    repeat: int  # the answer's generation repeat
    question: str
    kind: str  # ANSWERABLE (with evidence its asker may read), UNANSWERABLE or UNAUTHORIZED
    passages: tuple[str, ...]  # the units passed to the answerer, in the prompt's order ([1] first)
    answer: str
    abstained: bool
    citation_valid: bool
    evidence: tuple[str, ...]  # the gold evidence from notes the asker may read

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.question_id, self.strategy, self.retriever, self.llm_version)


def answer_sha256(answer: str) -> str:
    """The hex sha256 of an answer's text as answers.parquet holds it: what a person's label names."""
    return hashlib.sha256(answer.encode()).hexdigest()


def judge_items(
    answers: pd.DataFrame,
    units: Mapping[tuple[str, str], Mapping[str, Sequence[Unit]]],
    questions: Sequence[Question],
    access: Mapping[str, Sequence[str]],
) -> list[Item]:
    """One item per answer row. `units`: per run, per question, the units its prompt passed
    (`prompt_units`); `access`: each note's groups. An answer citing a unit its prompt does not pass
    now is older than the retrieval: an error, never judged against other passages."""
    by_id = {str(q.id): q for q in questions}
    items = []
    for row in answers.itertuples(index=False):
        qid, run = str(row.question_id), f"{row.strategy}/{row.retriever}"
        q = by_id.get(qid)
        passed = units.get((row.strategy, row.retriever), {}).get(qid)
        if q is None or passed is None:
            raise ValueError(
                f"judgments: answers.parquet holds question {qid} of run {run}, which the questions and "
                "runs answered now do not: materialize answers"
            )
        if not set(row.cited) <= {u.chunk_id for u in passed}:
            raise ValueError(
                f"judgments: the answer to question {qid} ({run}) cites units its prompt does not pass "
                "now: answers.parquet is older than the retrieval; materialize answers"
            )
        evidence = tuple(
            e.text for e in q.evidence if e.note in access and may_read(q.groups, access[e.note])
        )
        if q.category == UNAUTHORIZED:
            kind = UNAUTHORIZED
        else:
            kind = ANSWERABLE if q.answerable and evidence else UNANSWERABLE
        items.append(
            Item(
                question_id=qid,
                split=str(q.split),
                strategy=row.strategy,
                retriever=row.retriever,
                llm_version=row.llm_version,
                repeat=int(row.repeat),
                question=q.q,
                kind=kind,
                passages=tuple(u.text.strip() for u in passed),
                answer=row.answer,
                abstained=bool(row.abstained),
                citation_valid=bool(row.citation_valid),
                evidence=evidence,
            )
        )
    return items


def items_frame(items: Sequence[Item]) -> pd.DataFrame:
    """`answers/judged_items.parquet` before its labels: one row per item, its first answer repeat
    (the one people label), with what its judge saw."""
    first = [i for i in items if i.repeat == 0]
    return pd.DataFrame(
        {
            **{k: [getattr(i, k) for i in first] for k in KEY},
            "question": [i.question for i in first],
            "kind": [i.kind for i in first],
            "passages": [list(i.passages) for i in first],
            "evidence": [list(i.evidence) for i in first],
            "answer": [i.answer for i in first],
            "answer_sha256": [answer_sha256(i.answer) for i in first],
        },
        columns=[*KEY, "question", "kind", "passages", "evidence", "answer", "answer_sha256"],
    )
