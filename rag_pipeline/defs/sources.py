"""Source stage: the repository head, notes read from the pinned commit, cleaned text, the questions."""

import dagster as dg
import pandas as pd

from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile
from rag_pipeline.lib.cleaning import CLEANER_VERSION, clean_note
from rag_pipeline.lib.incremental import content_version, note_changes
from rag_pipeline.lib.questions import check_notes_exist, evidence_problems, questions_frame

SOURCE_PATH = "notes/source_notes.parquet"
CLEANED_PATH = "notes/cleaned_notes.parquet"


@dg.observable_source_asset(group_name="sources", description="The commit the configured ref names now.")
def notes_head(notes_repo: NotesRepository, store: DataStore) -> dg.DataVersion:
    return dg.DataVersion(notes_repo.head(store))


@dg.asset(
    group_name="sources",
    code_version="source-v1",
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
    frame = pd.DataFrame([n.__dict__ for n in notes])
    since = previous["commit"].iloc[0] if previous is not None and len(previous) else None
    context.log.info(f"read {len(frame)} notes at {commit} (previous build: {since or 'none'})")
    return dg.Output(
        frame,
        # the commit is left out: a commit that touches no note changes nothing downstream
        data_version=dg.DataVersion(content_version(frame, ["note", "path", "source_version"])),
        metadata={
            "commit": commit,
            "previous_commit": since or "",
            "repository": notes_repo.location(),
            "ref": notes_repo.ref,
            "notes": len(frame),
            "raw_chars": int(frame["raw"].str.len().sum()),
        },
    )


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
    kept = {} if previous is None else {r["note"]: r for r in previous.to_dict("records")}
    changes = note_changes(
        {n: f"{r.get('source_version')}|{r.get('cleaner_version')}" for n, r in kept.items()},
        {n: f"{v}|{CLEANER_VERSION}" for n, v in zip(source_notes["note"], source_notes["source_version"])},
    )
    reuse = set(changes.unchanged)
    rows = []
    for n in source_notes.itertuples(index=False):
        if n.note in reuse:
            rows.append(kept[n.note] | {"commit": n.commit, "path": n.path, "title": n.title})
            continue
        cleaned = clean_note(n.raw, n.title)
        rows.append(
            {
                "note": n.note,
                "path": n.path,
                "commit": n.commit,
                "source_version": n.source_version,
                "title": n.title,
                "cleaner_version": CLEANER_VERSION,
                "text": cleaned.text,
                "n_chars": len(cleaned.text),
                "sections": [s.__dict__ for s in cleaned.sections],
            }
        )
    frame = pd.DataFrame(rows)
    context.log.info(f"cleaned notes: {changes.counts()}")
    return dg.Output(
        frame,
        data_version=dg.DataVersion(content_version(frame, ["note", "source_version", "cleaner_version"])),
        metadata={"notes": len(frame), "chars": int(frame["n_chars"].sum())} | changes.counts(),
    )


@dg.asset(
    group_name="sources",
    code_version="questions-v1",
    kinds={"json", "parquet"},
    metadata={"storage_path": "notes/questions.parquet"},
    check_specs=[
        dg.AssetCheckSpec(
            "evidence_found_once",
            asset="questions",
            description="Every evidence string occurs exactly once in its note's cleaned text.",
        )
    ],
)
def questions(context: dg.AssetExecutionContext, cleaned_notes: pd.DataFrame, questions_file: QuestionsFile):
    """The gold questions with each evidence located in the cleaned text of its note."""
    items = questions_file.load()
    texts = dict(zip(cleaned_notes["note"], cleaned_notes["text"]))
    check_notes_exist(items, set(texts), questions_file.path)
    frame = questions_frame(items, texts)
    problems = evidence_problems(items, texts)
    yield dg.Output(
        frame,
        data_version=dg.DataVersion(content_version(frame, list(frame.columns))),
        metadata={
            "questions": len(frame),
            "answerable": int(frame["answerable"].sum()),
            "unanswerable": int((~frame["answerable"]).sum()),
            "categories": dg.MetadataValue.json(frame["category"].value_counts().to_dict()),
            "file": questions_file.path,
        },
    )
    yield dg.AssetCheckResult(
        passed=not problems,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none")},
    )
