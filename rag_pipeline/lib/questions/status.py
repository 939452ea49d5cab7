"""Gold labels that follow the notes: each question's status at the indexed commit and the drift
table. Pure: the git reading is in `gold_history`, the refresh in `gold_refresh`.

A question's `commit` is the notes commit its evidence was labelled against. Each evidence gets:

- `invalid`: its note is absent at the label commit, or the evidence is not found exactly once in
  that version's cleaned text (a labelling error); without a label commit, not found exactly once
  at the indexed commit;
- `ok`: found exactly once at the indexed commit and the note's blob is the same at both commits
  (or the question has no label commit);
- `carried`: the note changed (its blob differs, or it is absent at one of the two commits) and the
  evidence is still found exactly once at the indexed commit: scored;
- `stale`: the note changed and the evidence is not found exactly once: not scored, not an error.

A question (evidence and evidence2, maybe in two notes) takes its worst evidence's status in the
order invalid > stale > carried > ok. An unanswerable question (no evidence) is always `ok`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.questions.gold_file import Question
from rag_pipeline.lib.questions.similarity import most_similar_span
from rag_pipeline.lib.sources import HEADING

STATUSES = ("ok", "carried", "stale", "invalid")  # best to worst


@dataclass(frozen=True)
class NoteVersion:
    """A note at one commit: its path, version (`SourceNote.source_version`) and cleaned text."""

    path: str
    blob: str
    text: str


@dataclass(frozen=True)
class EvidenceStatus:
    field: str  # the key in the questions file: "evidence" or "evidence2"
    note: str
    text: str
    status: str
    found: int  # occurrences in the note's cleaned text at the indexed commit
    changed: bool  # the note differs between the label and the indexed commit
    reason: str | None = None


@dataclass(frozen=True)
class GoldStatus:
    question_id: str
    status: str
    label_commit: str | None
    evidence: tuple[EvidenceStatus, ...] = ()

    @property
    def reason(self) -> str | None:
        reasons = [e.reason for e in self.evidence if e.reason]
        return "; ".join(reasons) or None


def current_versions(cleaned: pd.DataFrame) -> dict[str, NoteVersion]:
    """The notes at the indexed commit from a `cleaned_notes` frame (note, path, source_version, text)."""
    return {
        r.note: NoteVersion(r.path, r.source_version, r.text)
        for r in cleaned[["note", "path", "source_version", "text"]].itertuples(index=False)
    }


def _times(count: int) -> str:
    return "absent from" if count == 0 else f"found {count} times in"


def _evidence_status(
    field: str, note: str, text: str, label: str | None, now: NoteVersion | None, then: NoteVersion | None
) -> EvidenceStatus:
    found = now.text.count(text) if now else 0
    changed = label is not None and (now is None or then is None or now.blob != then.blob)
    quoted = f"evidence {text[:30]!r}"

    def status(name: str, reason: str | None = None) -> EvidenceStatus:
        return EvidenceStatus(field, note, text, name, found, changed, reason)

    if label is None:
        return status("ok") if found == 1 else status("invalid", f"{quoted} {_times(found)} note {note!r}")
    labelled = then.text.count(text) if then else 0
    if labelled != 1:
        what = (
            f"note {note!r} does not exist" if then is None else f"{quoted} {_times(labelled)} note {note!r}"
        )
        return status("invalid", f"{what} at its label commit {label[:12]}")
    if not changed:
        return status("ok")
    if found == 1:
        return status("carried")
    where = "absent at the indexed commit" if now is None else f"{_times(found)} it now"
    return status("stale", f"{quoted}: note {note!r} changed since {label[:12]}, {where}")


def gold_statuses(
    questions: Sequence[Question],
    current: Mapping[str, NoteVersion],
    labelled: Mapping[str, Mapping[str, NoteVersion]],
) -> dict[str, GoldStatus]:
    """Per question id, its gold status at the indexed commit.

    `current` holds the notes at the indexed commit by slug; `labelled[sha][slug]` the notes at each
    label commit (a missing slug: the note did not exist then). Each question's `commit` must be a
    full sha, a key of `labelled` (see `gold_history.resolve_label_commits`)."""
    out: dict[str, GoldStatus] = {}
    for q in questions:
        label = q.commit
        if label is not None and label not in labelled:
            raise ValueError(f"question {q.id}: no notes given for its label commit {label}")
        then = labelled.get(label, {}) if label else {}
        evidence = tuple(
            _evidence_status(
                "evidence" if i == 0 else f"evidence{i + 1}",
                ev.note,
                ev.text,
                label,
                current.get(ev.note),
                then.get(ev.note),
            )
            for i, ev in enumerate(q.evidence)
        )
        status = max((e.status for e in evidence), key=STATUSES.index, default="ok")
        out[str(q.id)] = GoldStatus(str(q.id), status, label, evidence)
    return out


def gold_counts(statuses: Mapping[str, GoldStatus]) -> dict[str, int]:
    """How many questions have each status: {"ok": .., "carried": .., "stale": .., "invalid": ..}."""
    counts = dict.fromkeys(STATUSES, 0)
    for s in statuses.values():
        counts[s.status] += 1
    return counts


def gold_problems(statuses: Mapping[str, GoldStatus]) -> dict[str, str]:
    """Per invalid question id, why: the `evidence_problems` of a run with label commits."""
    return {qid: s.reason or "invalid" for qid, s in statuses.items() if s.status == "invalid"}


DRIFT_SCHEMA = pa.schema(
    [
        ("question_id", pa.string()),
        ("slug", pa.string()),  # the evidence's note
        ("field", pa.string()),  # evidence or evidence2
        ("evidence", pa.string()),  # the evidence as labelled
        ("gold_status", pa.string()),  # the question's status
        ("evidence_status", pa.string()),  # this evidence's status
        ("label_commit", pa.string()),
        ("indexed_commit", pa.string()),
        ("changed_in", pa.list_(pa.string())),  # commits touching the note between the two, newest first
        ("evidence_found", pa.int64()),  # occurrences at the indexed commit
        ("suggested_evidence", pa.string()),  # stale only; null when the note is gone
        ("suggested_section", pa.string()),  # the heading above the suggestion
        ("suggestion_score", pa.float64()),
    ]
)
DRIFT_COLUMNS = DRIFT_SCHEMA.names


def section_at(text: str, offset: int) -> str | None:
    """The heading of the section `offset` lies in (None before the first heading)."""
    heads = [m.group(2).strip() for m in HEADING.finditer(text, 0, offset)]
    return heads[-1] if heads else None


def drift_frame(
    statuses: Mapping[str, GoldStatus],
    current: Mapping[str, NoteVersion],
    labelled: Mapping[str, Mapping[str, NoteVersion]],
    indexed_commit: str,
    history: Mapping[tuple[str, str], Sequence[str]],
) -> pd.DataFrame:
    """One row per evidence that is not `ok` of each question that is not `ok` (so one row per such
    question, two when both evidences of one drifted), columns `DRIFT_COLUMNS`; write it with
    `pa.Table.from_pandas(frame, schema=DRIFT_SCHEMA, preserve_index=False)`.

    `history[(label_commit, slug)]` lists the commits that touched the note between the label and
    the indexed commit (`gold_history.note_history`); a stale evidence gets the span of the current
    note most similar to it."""
    rows = []
    for s in statuses.values():
        if s.status == "ok":
            continue
        for e in s.evidence:
            if e.status == "ok":
                continue
            match, now = None, current.get(e.note)
            if e.status == "stale" and now is not None:
                old = labelled[s.label_commit][e.note].text
                match = most_similar_span(e.text, old, now.text)
            rows.append(
                {
                    "question_id": s.question_id,
                    "slug": e.note,
                    "field": e.field,
                    "evidence": e.text,
                    "gold_status": s.status,
                    "evidence_status": e.status,
                    "label_commit": s.label_commit,
                    "indexed_commit": indexed_commit,
                    "changed_in": list(history.get((s.label_commit, e.note), ())) if s.label_commit else [],
                    "evidence_found": e.found,
                    "suggested_evidence": match.text if match else None,
                    "suggested_section": section_at(now.text, match.start) if match and now else None,
                    "suggestion_score": match.score if match else None,
                }
            )
    dtypes = {"evidence_found": "int64", "suggestion_score": "float64"}  # the rest: objects, None for null
    return pd.DataFrame(
        {c: pd.Series([r[c] for r in rows], dtype=dtypes.get(c, object)) for c in DRIFT_COLUMNS}
    )
