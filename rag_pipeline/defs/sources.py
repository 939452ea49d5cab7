"""Source stage: notes read from the pinned commit, cleaned text with section spans, the questions."""

import dagster as dg
import pandas as pd

from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile
from rag_pipeline.lib.cleaning import CLEANER_VERSION, clean_note
from rag_pipeline.lib.questions import check_notes_exist, evidence_problems, questions_frame


@dg.asset(
    group_name="sources",
    code_version="source-v1",
    kinds={"git", "parquet"},
    metadata={"storage_path": "notes/source_notes.parquet"},
)
def source_notes(
    context: dg.AssetExecutionContext, notes_repo: NotesRepository, store: DataStore
) -> pd.DataFrame:
    """One row per note at the pinned commit: note (slug), path, commit, blob sha, title, raw text."""
    commit, notes = notes_repo.read(store)
    frame = pd.DataFrame([n.__dict__ for n in notes])
    context.add_output_metadata(
        {
            "commit": commit,
            "repository": notes_repo.location(),
            "ref": notes_repo.ref,
            "notes": len(frame),
            "raw_chars": int(frame["raw"].str.len().sum()),
        }
    )
    return frame


@dg.asset(
    group_name="sources",
    code_version=CLEANER_VERSION,
    kinds={"parquet"},
    metadata={"storage_path": "notes/cleaned_notes.parquet"},
)
def cleaned_notes(context: dg.AssetExecutionContext, source_notes: pd.DataFrame) -> pd.DataFrame:
    """Plain text per note (code, markup and front matter removed) with every heading's span."""
    rows = []
    for n in source_notes.itertuples(index=False):
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
    context.add_output_metadata({"notes": len(frame), "chars": int(frame["n_chars"].sum())})
    return frame


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
