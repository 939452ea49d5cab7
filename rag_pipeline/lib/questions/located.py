"""The questions stage as one call: the gold questions located in the notes indexed, each with its
split, its asker's access and its gold status at the indexed commit, and the drift rows of those
that are not ok."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import git
import pandas as pd

from rag_pipeline.lib.core import UNAUTHORIZED
from rag_pipeline.lib.questions.evidence import invalid_gold_message
from rag_pipeline.lib.questions.gold_file import (
    Question,
    QuestionsError,
    check_notes_exist,
    question_splits,
    questions_frame,
    with_access,
)
from rag_pipeline.lib.questions.history import assess, resolve_label_commits
from rag_pipeline.lib.questions.quoting import QuoteCheck, quoting_warnings
from rag_pipeline.lib.questions.status import current_versions, gold_counts, gold_problems


@dataclass
class Located:
    frame: pd.DataFrame  # notes/questions.parquet
    drift: pd.DataFrame  # notes/gold_drift.parquet: the questions whose gold is not ok
    problems: dict[str, str]  # the invalid questions, and why
    quoting: list[str]  # the questions quoting a note their asker may not read
    counts: dict[str, int]  # per gold status, how many

    def figures(self) -> dict[str, object]:
        """The questions as their page shows them (`quoting_restricted` in Markdown)."""
        frame = self.frame
        return {
            "questions": len(frame),
            "answerable": int(frame["answerable"].sum()),
            "unanswerable": int((~frame["answerable"] & (frame["category"] != UNAUTHORIZED)).sum()),
            "unauthorized": int((frame["category"] == UNAUTHORIZED).sum()),
            "invalid": len(self.problems),
            "quoting_restricted": "\n".join(f"- {w}" for w in self.quoting) or "none",
            "n_carried_gold": self.counts["carried"],
            "n_stale_gold": self.counts["stale"],
            "categories": frame["category"].value_counts().to_dict(),
            "splits": frame["split"].value_counts().to_dict(),
        }


@dataclass(frozen=True)
class Notes:
    """The notes indexed: the repository at `commit`, the notes it holds (`glob` less `exclude`), and
    the cleaned notes (note, path, source_version, text, access, title)."""

    repo: git.Repo
    commit: str
    glob: str
    exclude: str
    cleaned: pd.DataFrame


def locate_questions(
    asked: list[Question],
    notes: Notes,
    test_share: float,
    source: str,
    skip_invalid: bool,
    warn: Callable[[str], None],
) -> Located:
    """The questions of the file `source` located in `notes`. A bad gold label fails with every
    question named, or with `skip_invalid` is said (`warn`) and kept apart; a question quoting a
    note its asker may not read is said and still asked."""
    cleaned = notes.cleaned
    texts = dict(zip(cleaned["note"], cleaned["text"]))
    # split as the file has the questions: a note's access moving a question's category moves
    # no question's split
    splits = question_splits(asked, test_share)
    items = resolve_label_commits(notes.repo, asked, source)
    # a labelled question whose note is gone is stale, not an error
    check_notes_exist([q for q in items if q.commit is None], set(texts), source)
    items = with_access(items, dict(zip(cleaned["note"], cleaned["access"])), source)
    quoting = quoting_warnings(
        items, QuoteCheck(zip(*(cleaned[c] for c in ("note", "access", "text", "title")))), source
    )
    for line in quoting:  # the question is still asked: a warning, not a failure
        warn(line)
    statuses, drift = assess(
        notes.repo, items, notes.commit, notes.glob, notes.exclude, source, current_versions(cleaned)
    )
    problems = gold_problems(statuses)
    if problems and not skip_invalid:
        raise QuestionsError(invalid_gold_message(source, problems))
    if problems:
        warn(invalid_gold_message(source, problems))
    status = {q: s.status for q, s in statuses.items()}
    frame = questions_frame(items, texts, problems, status, splits=splits)
    return Located(frame, drift, problems, quoting, gold_counts(statuses))
