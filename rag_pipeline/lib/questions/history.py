"""The git side of gold statuses: label commits resolved, notes read at a commit, a note's history.

`assess` puts it together with `rag_pipeline.lib.questions.status` for a repository and an indexed commit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

import git
import pandas as pd

from rag_pipeline.lib.questions.gold_file import Question, QuestionsError
from rag_pipeline.lib.questions.status import GoldStatus, NoteVersion, drift_frame, gold_statuses
from rag_pipeline.lib.sources import (
    FrontMatterError,
    NotesSourceError,
    blob_text,
    clean_note,
    gives_access,
    note_entries,
    note_id,
    note_version,
    read_cascades,
    resolve_commit,
    split_front_matter,
    title_of,
)


def resolve_label_commits(repo: git.Repo, questions: Sequence[Question], source: str) -> list[Question]:
    """The questions with each `commit` replaced by the full sha it names in `repo`.

    A sha that names no commit there (unknown, ambiguous, or a tree or blob) is a `QuestionsError`
    naming the file and the question."""
    out = []
    for q in questions:
        if q.commit is None:
            out.append(q)
            continue
        try:
            full = repo.commit(q.commit).hexsha
        except (ValueError, git.exc.ODBError) as exc:
            kind = "is ambiguous" if isinstance(exc, git.exc.AmbiguousObjectName) else "names no commit"
            raise QuestionsError(
                f"{source}: question {q.id}: label commit {q.commit!r} {kind} in the notes repository "
                f"{repo.working_tree_dir or repo.git_dir}"
            ) from None
        out.append(dataclasses.replace(q, commit=full))
    return out


def note_versions(
    commit: git.Commit, glob: str, exclude: Sequence[str], slugs: Iterable[str] | None = None
) -> dict[str, NoteVersion]:
    """The notes at `commit` by slug (only `slugs` when given), each with its version (as
    `read_notes` gives it: with what a section cascades onto it) and its cleaned text."""
    wanted = None if slugs is None else set(slugs)
    entries = [
        (path, sha)
        for path, sha in note_entries(commit, glob, exclude)
        if wanted is None or note_id(path) in wanted
    ]
    cascades = read_cascades(commit, [path for path, _ in entries])
    out: dict[str, NoteVersion] = {}
    for path, sha in entries:
        slug = note_id(path)
        raw = blob_text(commit, path, sha)
        try:
            fields, _ = split_front_matter(raw)
            text = clean_note(raw, title_of(fields, slug)).text
        except FrontMatterError as exc:
            raise NotesSourceError(f"{path} at commit {commit.hexsha[:12]}: {exc}") from None
        cascaded = None if gives_access(fields) else cascades.onto(path)
        out[slug] = NoteVersion(path, note_version(sha, cascaded), text)
    return out


def label_versions(
    repo: git.Repo, questions: Sequence[Question], glob: str, exclude: Sequence[str]
) -> dict[str, dict[str, NoteVersion]]:
    """Per label commit (full sha) of `questions`, the notes their evidence names, as then."""
    wanted: dict[str, set[str]] = {}
    for q in questions:
        if q.commit is not None:
            wanted.setdefault(q.commit, set()).update(ev.note for ev in q.evidence)
    return {sha: note_versions(repo.commit(sha), glob, exclude, slugs) for sha, slugs in wanted.items()}


def note_history(repo: git.Repo, label: str, indexed: str, paths: Iterable[str]) -> list[str]:
    """The commits that touched any of `paths` between `label` and `indexed`, newest first.

    `git log label...indexed -- paths`: the commits after the label when the index is newer, the
    ones after the index when it is older, both sides when the two diverged."""
    paths = sorted(set(paths))
    if label == indexed or not paths:
        return []
    return [c.hexsha for c in repo.iter_commits(f"{label}...{indexed}", paths=paths)]


def histories(
    repo: git.Repo,
    statuses: Mapping[str, GoldStatus],
    current: Mapping[str, NoteVersion],
    labelled: Mapping[str, Mapping[str, NoteVersion]],
    indexed: str,
) -> dict[tuple[str, str], list[str]]:
    """`note_history` for every (label commit, note) of an evidence that is not `ok`; a note's
    paths at both commits are followed (a note moved to another folder keeps its slug)."""
    out: dict[tuple[str, str], list[str]] = {}
    for s in statuses.values():
        for e in s.evidence:
            key = (s.label_commit, e.note)
            if e.status == "ok" or s.label_commit is None or key in out:
                continue
            versions = (labelled.get(s.label_commit, {}).get(e.note), current.get(e.note))
            out[key] = note_history(repo, s.label_commit, indexed, [v.path for v in versions if v])
    return out


def assess(
    repo: git.Repo,
    questions: Sequence[Question],
    indexed: str,
    glob: str,
    exclude: Sequence[str],
    source: str,
    current: Mapping[str, NoteVersion] | None = None,
) -> tuple[dict[str, GoldStatus], pd.DataFrame]:
    """The gold statuses at `indexed` (a ref or sha) and the drift frame, read from `repo`.

    `current` (e.g. `gold.current_versions(cleaned_notes)`) saves reading the indexed commit again;
    `source` names the questions file in errors."""
    commit = resolve_commit(repo, indexed)
    resolved = resolve_label_commits(repo, questions, source)
    if current is None:
        slugs = {ev.note for q in resolved for ev in q.evidence}
        current = note_versions(commit, glob, exclude, slugs)
    labelled = label_versions(repo, resolved, glob, exclude)
    statuses = gold_statuses(resolved, current, labelled)
    history = histories(repo, statuses, current, labelled, commit.hexsha)
    return statuses, drift_frame(statuses, current, labelled, commit.hexsha, history)
