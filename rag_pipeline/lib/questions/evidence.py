"""Where a question's evidence lies in its note's cleaned text, and why a label cannot be located."""

from __future__ import annotations

from rag_pipeline.lib.questions.question import Evidence, Question


def evidence_problems(questions: list[Question], texts: dict[str, str]) -> dict[str, str]:
    """Per question id, why its gold labels are unusable: an evidence absent from its note's
    cleaned text or found more than once there (the evidence would be located wrongly)."""
    problems: dict[str, list[str]] = {}
    for q in questions:
        for ev in q.evidence:
            count = texts.get(ev.note, "").count(ev.text)
            if count != 1:
                where = "absent from" if count == 0 else f"found {count} times in"
                problems.setdefault(str(q.id), []).append(
                    f"evidence {ev.text[:30]!r} {where} note {ev.note!r}"
                )
    return {qid: "; ".join(p) for qid, p in problems.items()}


def invalid_gold_message(source: str, problems: dict[str, str]) -> str:
    listed = ", ".join(f"question {qid} ({p})" for qid, p in problems.items())
    return (
        f"{source}: {len(problems)} question(s) with bad gold labels: {listed}. Fix the evidence strings "
        "(each must occur exactly once in its note's cleaned text), or set RAG_INVALID_QUESTIONS=skip "
        "to leave these questions out of every report"
    )


def evidence_span(ev: Evidence, texts: dict[str, str]) -> tuple[int, int] | None:
    """Offsets of the evidence's first occurrence in its note's cleaned text."""
    at = texts.get(ev.note, "").find(ev.text)
    return None if at < 0 else (at, at + len(ev.text))
