"""The gold questions, located in the notes indexed, each with its gold status at the indexed commit
(ok, carried, stale, invalid) and the drift rows of those that are not ok."""

from collections.abc import Mapping

import dagster as dg
import pyarrow as pa

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile
from rag_pipeline.lib.core import UNAUTHORIZED, content_version, shown_path, write_table
from rag_pipeline.lib.questions import (
    DRIFT_SCHEMA,
    QuestionsError,
    QuoteCheck,
    assess,
    check_notes_exist,
    current_versions,
    gold_counts,
    gold_problems,
    invalid_gold_message,
    question_splits,
    questions_frame,
    quoting_warnings,
    resolve_label_commits,
    with_access,
)

CHECK = (
    "Every evidence string occurs exactly once in its note's cleaned text, and in the version it was "
    "labelled against (with RAG_INVALID_QUESTIONS=skip, a warning listing the questions left out); a "
    "stale label (its note changed since) is never a failure."
)


def questions_asset(resources: Mapping[str, object]) -> dg.AssetsDefinition:
    @stage_asset(
        "questions",
        group="sources",
        checks=[("evidence_found_once", CHECK, True)],
        config=lambda questions_file, notes_repo: config_digest(
            questions_file.version(), notes_repo.version()
        ),
        external=lambda questions_file: {"questions_sha256": questions_file.sha256()},
        resources=resources,
        kinds=("json", "parquet"),
        deps=["source_notes", "cleaned_notes", "questions_file"],
        description="The gold questions with each evidence located in the cleaned text of its note and "
        "its `gold_status` at the indexed commit and its `split` (`dev` or `test`); bad gold labels fail the run before anything is scored, "
        "naming every question (with `invalid: skip` they are kept apart and counted as `n_invalid`); "
        "stale labels are left out of scoring and listed in `reports/gold_drift.parquet`.",
    )
    def _questions(
        context: dg.AssetExecutionContext,
        questions_file: QuestionsFile,
        notes_repo: NotesRepository,
        store: DataStore,
    ):
        digest, source = questions_file.sha256(), shown_path(questions_file.path)
        commit = str(store.read(lanes.SOURCE_NOTES, columns=["commit"])["commit"].iloc[0])
        cleaned = store.read(
            lanes.CLEANED_NOTES, columns=["note", "path", "source_version", "text", "access", "title"]
        )
        texts = dict(zip(cleaned["note"], cleaned["text"]))
        repo = notes_repo.open()
        asked = questions_file.load()
        # split as the file has the questions: a note's access moving a question's category moves
        # no question's split
        splits = question_splits(asked, questions_file.test_share)
        items = resolve_label_commits(repo, asked, source)
        # a labelled question whose note is gone is stale, not an error
        check_notes_exist([q for q in items if q.commit is None], set(texts), source)
        items = with_access(items, dict(zip(cleaned["note"], cleaned["access"])), source)
        quoting = quoting_warnings(
            items, QuoteCheck(zip(*(cleaned[c] for c in ("note", "access", "text", "title")))), source
        )
        for line in quoting:  # the question is still asked: a warning, not a failure
            context.log.warning(line)
        statuses, drift = assess(
            repo, items, commit, notes_repo.glob, notes_repo.exclude, source, current_versions(cleaned)
        )
        problems = gold_problems(statuses)
        if problems and questions_file.invalid != "skip":
            raise QuestionsError(invalid_gold_message(source, problems))
        if problems:
            context.log.warning(invalid_gold_message(source, problems))
        status = {q: s.status for q, s in statuses.items()}
        frame = questions_frame(items, texts, problems, status, splits=splits)
        frame["questions_sha256"] = digest
        path = store.write(frame, lanes.QUESTIONS)
        drift_path = store.path(lanes.GOLD_DRIFT)
        write_table(pa.Table.from_pandas(drift, schema=DRIFT_SCHEMA, preserve_index=False), drift_path)
        counts = gold_counts(statuses)
        check = dg.AssetCheckResult(
            check_name="evidence_found_once",
            passed=not problems,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "left_out": dg.MetadataValue.md(
                    "\n".join(f"- {q}: {p}" for q, p in problems.items()) or "none"
                )
            },
        )
        return materialized(
            # the drift rows are read by the summary alone, which runs again at every commit anyway: a
            # commit that only lengthens their history must not re-run retrieval
            content_version(frame, list(frame.columns)),
            {
                "questions": len(frame),
                "answerable": int(frame["answerable"].sum()),
                "unanswerable": int((~frame["answerable"] & (frame["category"] != UNAUTHORIZED)).sum()),
                "unauthorized": int((frame["category"] == UNAUTHORIZED).sum()),
                "invalid": len(problems),
                "quoting_restricted": dg.MetadataValue.md("\n".join(f"- {w}" for w in quoting) or "none"),
                "n_carried_gold": counts["carried"],
                "n_stale_gold": counts["stale"],
                "categories": dg.MetadataValue.json(frame["category"].value_counts().to_dict()),
                "splits": dg.MetadataValue.json(frame["split"].value_counts().to_dict()),
                "file": questions_file.path,
                "indexed_commit": commit,
            },
            files=[path, drift_path],
            checks=[check],
        )

    return _questions
