"""Source stage: the repository head, notes read from the pinned commit, cleaned text, the questions."""

import hashlib
from pathlib import Path

import dagster as dg
import pandas as pd

from rag_pipeline.defs.io import data_version, versioned
from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile
from rag_pipeline.lib.access import UNAUTHORIZED
from rag_pipeline.lib.cleaning import CLEANER_VERSION, clean_note
from rag_pipeline.lib.incremental import rebuild_by_note
from rag_pipeline.lib.questions import (
    QuestionsError,
    check_notes_exist,
    evidence_problems,
    invalid_gold_message,
    questions_frame,
    with_access,
)

SOURCE_PATH = "notes/source_notes.parquet"
CLEANED_PATH = "notes/cleaned_notes.parquet"


@dg.observable_source_asset(group_name="sources", description="The commit the configured ref names now.")
def notes_head(notes_repo: NotesRepository, store: DataStore) -> dg.DataVersion:
    return dg.DataVersion(notes_repo.head(store))


@dg.asset(
    group_name="sources",
    code_version="source-v2",
    kinds={"git", "parquet"},
    deps=[notes_head],
    metadata={"storage_path": SOURCE_PATH},
)
def source_notes(
    context: dg.AssetExecutionContext, notes_repo: NotesRepository, store: DataStore
) -> dg.Output:
    """One row per note at the pinned commit: note (slug), path, commit, blob sha, title, raw text."""
    previous = store.previous(SOURCE_PATH)
    commit, notes = notes_repo.read(store)
    frame = pd.DataFrame([n.__dict__ | {"access": list(n.access)} for n in notes])
    since = previous["commit"].iloc[0] if previous is not None and len(previous) else None
    context.log.info(f"read {len(frame)} notes at {commit} (previous build: {since or 'none'})")
    return dg.Output(
        frame,
        # the commit is left out: a commit that touches no note changes nothing downstream
        data_version=data_version(frame, ["note", "path", "source_version"]),
        metadata={
            "commit": commit,
            "previous_commit": since or "",
            "repository": notes_repo.location(),
            "ref": notes_repo.ref,
            "notes": len(frame),
            "raw_chars": int(frame["raw"].str.len().sum()),
        },
    )


def _cleaned(note: dict) -> list[dict]:
    cleaned = clean_note(note["raw"], note["title"])
    fields = ("note", "path", "commit", "source_version", "title", "cleaner_version", "access")
    return [
        {k: note[k] for k in fields}
        | {
            "text": cleaned.text,
            "n_chars": len(cleaned.text),
            "sections": [s.__dict__ for s in cleaned.sections],
        }
    ]


@dg.asset(
    group_name="sources",
    code_version=CLEANER_VERSION,
    kinds={"parquet"},
    metadata={"storage_path": CLEANED_PATH},
)
def cleaned_notes(
    context: dg.AssetExecutionContext, source_notes: pd.DataFrame, store: DataStore
) -> dg.Output:
    """Plain text per note (code, markup and front matter removed) with every heading's span.

    A note whose blob sha and cleaner version are unchanged is taken from the previous build.
    """
    previous = store.previous(CLEANED_PATH)
    rows, changes = rebuild_by_note(
        [] if previous is None else previous.to_dict("records"),
        [n | {"cleaner_version": CLEANER_VERSION} for n in source_notes.to_dict("records")],
        key=lambda r: f"{r.get('source_version')}|{r.get('cleaner_version')}",
        build=_cleaned,
        refresh=lambda row, note: row | {"commit": note["commit"], "path": note["path"]},
    )
    frame = pd.DataFrame(rows)
    empty = sorted(frame.loc[frame["text"].str.strip() == "", "path"])
    if empty:
        context.log.warning(f"{len(empty)} note(s) hold no text after cleaning: {', '.join(empty)}")
    context.log.info(f"cleaned notes: {changes.counts()}")
    return versioned(
        frame,
        ["note", "source_version", "cleaner_version"],
        notes=len(frame),
        chars=int(frame["n_chars"].sum()),
        notes_empty=len(empty),
        **changes.counts(),
    )


@dg.asset(
    group_name="sources",
    code_version="questions-v2",
    kinds={"json", "parquet"},
    metadata={"storage_path": "notes/questions.parquet"},
    check_specs=[
        dg.AssetCheckSpec(
            "evidence_found_once",
            asset="questions",
            blocking=True,
            description="Every evidence string occurs exactly once in its note's cleaned text "
            "(with RAG_INVALID_QUESTIONS=skip, a warning listing the questions left out).",
        )
    ],
)
def questions(context: dg.AssetExecutionContext, cleaned_notes: pd.DataFrame, questions_file: QuestionsFile):
    """The gold questions with each evidence located in the cleaned text of its note.

    Bad gold labels fail the run before anything is scored, naming every question; with
    `invalid: skip` those questions are kept apart (column `invalid`) and counted as `n_invalid`."""
    items = questions_file.load()
    texts = dict(zip(cleaned_notes["note"], cleaned_notes["text"]))
    check_notes_exist(items, set(texts), questions_file.path)
    items = with_access(items, dict(zip(cleaned_notes["note"], cleaned_notes["access"])), questions_file.path)
    problems = evidence_problems(items, texts)
    if problems and questions_file.invalid != "skip":
        raise QuestionsError(invalid_gold_message(questions_file.path, problems))
    frame = questions_frame(items, texts, problems)
    frame["questions_sha256"] = hashlib.sha256(Path(questions_file.path).read_bytes()).hexdigest()
    if problems:
        context.log.warning(invalid_gold_message(questions_file.path, problems))
    yield versioned(
        frame,
        questions=len(frame),
        answerable=int(frame["answerable"].sum()),
        unanswerable=int((~frame["answerable"] & (frame["category"] != UNAUTHORIZED)).sum()),
        unauthorized=int((frame["category"] == UNAUTHORIZED).sum()),
        invalid=len(problems),
        categories=dg.MetadataValue.json(frame["category"].value_counts().to_dict()),
        file=questions_file.path,
        questions_sha256=frame["questions_sha256"].iloc[0],
    )
    yield dg.AssetCheckResult(
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "left_out": dg.MetadataValue.md("\n".join(f"- {q}: {p}" for q, p in problems.items()) or "none")
        },
    )
