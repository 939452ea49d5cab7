"""Gold questions in the reference experiment's JSON format, with an optional second evidence.

    {"id": 21, "q": "...", "slug": "columnar-storage", "section": "...", "evidence": "...",
     "category": "number", "answer_pattern": "15\\.6", "evidence2": "...", "section2": "..."}

`slug: null` marks a question the notes cannot answer. `slug2` (default: `slug`) lets
the second evidence live in another note. `commit` (optional, a full or abbreviated sha) is the
notes commit the evidence was labelled against; `"critical": true` marks a question a release may not
newly miss (see `rag_pipeline.lib.release`); `rag_pipeline.lib.questions.status` follows the label from
there to the indexed commit (`ok`, `carried`, `stale` or `invalid`); `groups` are the asker's groups.
`"generated": true` (and `"generator"`) marks a question `gold generate` wrote, reported apart (its
`source`); `"source": "asked"` one a user asked (`gold from-asks`), scored with the hand-written ones
once a person has given its evidence (until then, with no `slug`, it is left out: `gold status` lists
it); `"split": "dev"` or `"test"` puts it in that split (default: by its id, see
`rag_pipeline.lib.questions.splits`). Any other field is an error unless it starts with `x-`
(`rag_pipeline.lib.questions.fields`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rag_pipeline.lib.core import UNAUTHORIZED, may_read
from rag_pipeline.lib.questions.evidence import evidence_span
from rag_pipeline.lib.questions.fields import SOURCES, awaiting_evidence, unknown_field
from rag_pipeline.lib.questions.question import Evidence, Question, QuestionsError
from rag_pipeline.lib.questions.splits import SPLITS, TEST_SHARE, stratified_splits


def _field(item: dict, name: str, where: str, kinds: tuple[type, ...], required: bool = True):
    value = item.get(name)
    if value is None:
        if required:
            raise QuestionsError(f"{where}: missing field {name!r}")
        return None
    if not isinstance(value, kinds) or (isinstance(value, str) and not value.strip()):
        raise QuestionsError(
            f"{where}: field {name!r} must be a non-empty {kinds[0].__name__}, got {value!r}"
        )
    return value


QUESTIONS = "notes/questions.parquet"  # the last build's questions, under the data directory
_SHA = re.compile(r"[0-9a-fA-F]{4,40}")


def _commit(item: dict, where: str) -> str | None:
    value = _field(item, "commit", where, (str,), required=False)
    if value is not None and not _SHA.fullmatch(value.strip()):
        raise QuestionsError(
            f"{where}: field 'commit' must be a commit sha (4 to 40 hex digits), got {value!r}"
        )
    return None if value is None else value.strip().lower()


def _flag(item: dict, name: str, where: str) -> bool:
    value = item.get(name, False)
    if not isinstance(value, bool):
        raise QuestionsError(f"{where}: field {name!r} must be true or false, got {value!r}")
    return value


def parse_questions(items: object, source: str) -> list[Question]:
    if not isinstance(items, list):
        raise QuestionsError(f"{source}: expected a JSON list of questions, got {type(items).__name__}")
    questions: list[Question] = []
    seen: set = set()
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise QuestionsError(f"{source}: item #{n} is not an object")
        problem = unknown_field(item)
        if problem:
            named = isinstance(item.get("id"), (int, str))
            raise QuestionsError(
                f"{source}: " + (f"question {item['id']}" if named else f"item #{n}") + f": {problem}"
            )
        qid = _field(item, "id", f"{source}: item #{n}", (int, str))
        where = f"{source}: question {qid}"
        if qid in seen:
            raise QuestionsError(f"{where}: duplicate id")
        seen.add(qid)
        text = _field(item, "q", where, (str,))
        slug = _field(item, "slug", where, (str,), required=False)
        evidence: list[Evidence] = []
        if slug is not None:
            evidence.append(
                Evidence(
                    slug,
                    _field(item, "section", where, (str,), False),
                    _field(item, "evidence", where, (str,)),
                )
            )
            second = _field(item, "evidence2", where, (str,), required=False)
            if second is not None:
                note2 = _field(item, "slug2", where, (str,), required=False) or slug
                evidence.append(Evidence(note2, _field(item, "section2", where, (str,), False), second))
        category = _field(item, "category", where, (str,), required=False)
        _field(item, "generator", where, (str,), required=False)  # provenance only: checked, not kept
        if item.get("source", SOURCES[0]) not in SOURCES:
            raise QuestionsError(f"{where}: field 'source' must be one of {SOURCES}, got {item['source']!r}")
        if awaiting_evidence(item):
            continue  # a candidate from the ask log: scored once a person gives its evidence
        split = _field(item, "split", where, (str,), required=False)
        if split is not None and split not in SPLITS:
            raise QuestionsError(f'{where}: field \'split\' must be "dev" or "test", got {split!r}')
        groups = _field(item, "groups", where, (list, str), required=False)
        if isinstance(groups, str):
            groups = [groups]
        if groups is not None and not all(isinstance(g, str) and g.strip() for g in groups):
            raise QuestionsError(f"{where}: field 'groups' must be a list of group names, got {groups!r}")
        questions.append(
            Question(
                id=qid,
                q=text,
                category=category or ("unanswerable" if slug is None else "uncategorized"),
                evidence=tuple(evidence),
                answer_pattern=_field(item, "answer_pattern", where, (str,), required=False),
                groups=None if groups is None else tuple(sorted({g.strip() for g in groups})),
                commit=_commit(item, where),
                critical=_flag(item, "critical", where),
                generated=_flag(item, "generated", where),
                split=split,
            )
        )
    if not questions:
        raise QuestionsError(f"{source}: no questions")
    return questions


def questions_bytes(path: str | Path) -> bytes:
    """The questions file's bytes; a path that is missing or a directory is one line saying so."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        problem = "questions file not found; set RAG_QUESTIONS to your questions file"
    except IsADirectoryError:
        problem = "is a directory, not a questions file; set RAG_QUESTIONS to a JSON file"
    raise QuestionsError(f"{path}: {problem}")


def load_questions(path: str | Path) -> list[Question]:
    try:
        items = json.loads(questions_bytes(path).decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise QuestionsError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    return parse_questions(items, str(path))


def check_notes_exist(questions: list[Question], notes: set[str], source: str) -> None:
    for q in questions:
        for ev in q.evidence:
            if ev.note not in notes:
                raise QuestionsError(f"{source}: question {q.id}: unknown note slug {ev.note!r}")


def with_access(questions: list[Question], access: dict[str, list[str]], source: str) -> list[Question]:
    """The questions with those about a note their asker may not read marked `unauthorized`.

    `access` holds each note's groups; a question naming a group no note has is an error (a typo
    would silently make every restricted note unreadable to it)."""
    known = {g for groups in access.values() for g in groups}
    out = []
    for q in questions:
        unknown = sorted(set(q.groups or ()) - known)
        if unknown:
            raise QuestionsError(
                f"{source}: question {q.id}: unknown group(s) {', '.join(map(repr, unknown))}; "
                f"the notes' groups are {sorted(known) or 'none (every note is public)'}"
            )
        readable = all(may_read(q.groups, access.get(ev.note, [])) for ev in q.evidence)
        out.append(q if readable else dataclasses.replace(q, category=UNAUTHORIZED))
    return out


def question_splits(questions: list[Question], test_share: float) -> dict[str, str]:
    """{question id: split}: its own, or stratified by category and answerability as the questions
    file has them (`stratified_splits`), so a note's access changing moves no question's split."""
    return stratified_splits(((q.id, q.split, q.category, q.answerable) for q in questions), test_share)


def questions_frame(
    questions: list[Question],
    texts: dict[str, str],
    invalid: dict[str, str] | None = None,
    gold_status: dict[str, str] | None = None,
    test_share: float = TEST_SHARE,
    splits: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per question; each evidence carries its located span (null when absent); `invalid`
    holds why a question is left out as a labelling error (null for a usable one); `gold_status`
    (by question id, see `rag_pipeline.lib.questions.status`; default `invalid` or `ok`), `label_commit`
    and `split` (from `splits`, by default `question_splits` of these questions with `test_share`)."""
    invalid = invalid or {}
    gold_status = gold_status or {}
    splits = question_splits(questions, test_share) if splits is None else splits
    rows = []
    for q in questions:
        evidence = []
        for ev in q.evidence:
            span = evidence_span(ev, texts)
            evidence.append(
                {
                    "note": ev.note,
                    "section": ev.section,
                    "text": ev.text,
                    "start": span[0] if span else None,
                    "end": span[1] if span else None,
                }
            )
        rows.append(
            {
                "question_id": str(q.id),
                "q": q.q,
                "category": q.category,
                "answerable": q.answerable,
                "answer_pattern": q.answer_pattern,
                "groups": None if q.groups is None else list(q.groups),
                "evidence": evidence,
                "invalid": invalid.get(str(q.id)),
                "label_commit": q.commit,
                "critical": q.critical,
                "source": q.source,
                "split": splits[str(q.id)],
                "gold_status": gold_status.get(str(q.id), "invalid" if str(q.id) in invalid else "ok"),
            }
        )
    return pd.DataFrame(rows)


def usable(frame: pd.DataFrame) -> pd.DataFrame:
    """The questions that are scored: those whose gold labels are valid and not stale."""
    if "invalid" not in frame and "gold_status" not in frame:
        return frame
    keep = pd.Series(True, index=frame.index)
    if "invalid" in frame:
        keep &= frame["invalid"].isna()
    if "gold_status" in frame:
        keep &= frame["gold_status"] != "stale"
    return frame[keep].reset_index(drop=True)


def asker_groups(row) -> tuple[str, ...] | None:
    """The `groups` of a questions-frame row (None: the asker may read every note)."""
    groups = getattr(row, "groups", None)
    return None if groups is None or (isinstance(groups, float) and pd.isna(groups)) else tuple(groups)


def askers(questions: pd.DataFrame) -> list[list[str] | None]:
    """Each asker's groups, from the questions' `groups` column; None may read every row."""
    return [None if (g := asker_groups(row)) is None else list(g) for row in questions.itertuples()]


def questions_from_frame(
    frame: pd.DataFrame,
) -> tuple[list[Question], dict[str, list[tuple[str, int, int] | None]]]:
    """Inverse of `questions_frame`: the questions and, per question id, their evidence spans."""
    questions, spans = [], {}
    for row in frame.itertuples(index=False):
        evidence = list(row.evidence) if row.evidence is not None else []
        questions.append(
            Question(
                id=row.question_id,
                q=row.q,
                category=row.category,
                evidence=tuple(Evidence(e["note"], e["section"], e["text"]) for e in evidence),
                answer_pattern=row.answer_pattern if isinstance(row.answer_pattern, str) else None,
                groups=asker_groups(row),
                commit=label if isinstance(label := getattr(row, "label_commit", None), str) else None,
                critical=bool(getattr(row, "critical", False)),
                generated=getattr(row, "source", "hand") == "generated",
                split=getattr(row, "split", None),
            )
        )
        spans[row.question_id] = [
            None if pd.isna(e["start"]) else (e["note"], int(e["start"]), int(e["end"])) for e in evidence
        ]
    return questions, spans
