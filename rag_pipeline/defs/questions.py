"""The gold questions, located in the notes indexed, each with its gold status at the indexed commit
(ok, carried, stale, invalid) and the drift rows of those that are not ok."""

from collections.abc import Mapping

import dagster as dg
import pyarrow as pa

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile
from rag_pipeline.lib.core import content_version, shown_path, write_table
from rag_pipeline.lib.questions import (
    DRIFT_SCHEMA,
    Notes,
    locate_questions,
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
        logic=[evidence_check],
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
        commit = str(store.read(lanes.SOURCE_NOTES, columns=["commit"])["commit"].iloc[0])
        columns = ["note", "path", "source_version", "text", "access", "title"]
        notes = Notes(
            notes_repo.open(),
            commit,
            notes_repo.glob,
            notes_repo.exclude,
            store.read(lanes.CLEANED_NOTES, columns=columns),
        )
        skip = questions_file.invalid == "skip"
        source = shown_path(questions_file.path)
        found = locate_questions(
            questions_file.load(), notes, questions_file.test_share, source, skip, context.log.warning
        )
        frame = found.frame.assign(questions_sha256=questions_file.sha256())
        path = store.write(frame, lanes.QUESTIONS)
        drift_path = store.path(lanes.GOLD_DRIFT)
        write_table(pa.Table.from_pandas(found.drift, schema=DRIFT_SCHEMA, preserve_index=False), drift_path)
        figures = found.figures()
        figures["quoting_restricted"] = dg.MetadataValue.md(figures["quoting_restricted"])
        figures |= {key: dg.MetadataValue.json(figures[key]) for key in ("categories", "splits")}
        return materialized(
            # the drift rows are read by the summary alone, which runs again at every commit anyway: a
            # commit that only lengthens their history must not re-run retrieval
            content_version(frame, list(frame.columns)),
            figures | {"file": questions_file.path, "indexed_commit": commit},
            files=[path, drift_path],
            checks=[evidence_check(found.problems)],
        )

    return _questions


def evidence_check(problems: dict[str, str]) -> dg.AssetCheckResult:
    left_out = "\n".join(f"- {q}: {p}" for q, p in problems.items()) or "none"
    return dg.AssetCheckResult(
        check_name="evidence_found_once",
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"left_out": dg.MetadataValue.md(left_out)},
    )
