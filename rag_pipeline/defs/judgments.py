"""Judging stage: every answer judged on `faithful`, `correct` and `cites_support`, repeated; people's
labels correct the judge's mean (PPI); the bias checks; `reports/judged_summary.parquet`."""

from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.io import forward_logs
from rag_pipeline.defs.platform.lanes import run_units
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, JudgeResource, RetrievalResource
from rag_pipeline.lib.answers import BASELINE_STRATEGY
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import content_version, read_table, write_table
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.evaluation import LEDGER, record_judged, short, to_markdown
from rag_pipeline.lib.judging import (
    JUDGMENT_COLUMNS,
    SHORT_KEY,
    SUMMARY_COLUMNS,
    LabelsError,
    attach_labels,
    item_scores,
    items_frame,
    judge_all,
    judge_items,
    judged_summary,
    judged_table,
    question_scores,
    read_labels,
    served_lines,
)
from rag_pipeline.lib.questions import questions_from_frame, usable


@logic
def labels_of(judge: JudgeResource) -> pd.DataFrame:
    """People's labels from RAG_JUDGE_LABELS (none when it is unset)."""
    path = Path(judge.labels) if judge.labels else None
    if path is not None and not path.exists():
        raise LabelsError(f"RAG_JUDGE_LABELS={path}: no such file")
    return read_labels(path)


def shown_on(context: dg.AssetExecutionContext, metadata: Mapping[str, object]) -> None:
    """The judged summary on the pages of `answers` and `evaluation_summary` too, as an observation of
    each: Dagster's automation and stale status read only materializations of an asset that is
    materialized, so an observation changes nothing of what runs."""
    for key in ("answers", "evaluation_summary"):
        context.log_event(dg.AssetObservation(asset_key=key, metadata=dict(metadata)))


def judgments_asset(
    strategies: list[Strategy], served: tuple[str, str], resources: Mapping[str, object]
) -> dg.AssetsDefinition:
    names = [s.name for s in strategies]

    @stage_asset(
        "judgments",
        group="answers",
        # the judge (its repeats, bias sample and labels file), what rebuilds the passages an answer
        # was given (the context budget and the strategies), and the release run its pages show
        config=lambda judge, retrieval: config_digest(judge.version(), retrieval.version(), names, served),
        resources=resources,
        deps=[
            "answers",
            "questions",
            "cleaned_notes",
            "evaluation_summary",
            *(lanes.lane_key("retrieval", s) for s in strategies),
        ],
        description="Every answer judged on `faithful`, `correct` and `cites_support` by RAG_JUDGE "
        "(`rules` offline, or a chat model asked for one JSON verdict per criterion, repeated and "
        "cached); people's labels correct the mean (PPI++ or the labels alone, 95% interval); `answers/judgments.parquet`, "
        "`reports/judged_summary.parquet`.",
    )
    def judgments(
        context: dg.AssetExecutionContext,
        store: DataStore,
        retrieval: RetrievalResource,
        judge: JudgeResource,
    ) -> dg.MaterializeResult:
        labels = labels_of(judge)  # a bad labels file fails before anything is asked or written
        answers = store.read(lanes.ANSWERS)
        questions = store.read(lanes.QUESTIONS)
        cleaned_notes = store.read(lanes.CLEANED_NOTES)
        asked_questions, spans = questions_from_frame(usable(questions))
        runs = sorted(
            {(s, r) for s, r in zip(answers["strategy"], answers["retriever"]) if s != BASELINE_STRATEGY}
        )
        units = run_units(store, retrieval, strategies, runs, asked_questions, spans, cleaned_notes)
        access = dict(zip(cleaned_notes["note"], cleaned_notes["access"]))
        items = judge_items(answers, units, asked_questions, access)
        model = judge.get()
        with forward_logs(context):
            judged = judge_all(model, items, judge.times(model), judge.bias_sample)
        scores = item_scores(judged.rows)
        table, counts = attach_labels(items_frame(items), labels)
        if said := counts.warning():
            context.log.warning(f"RAG_JUDGE_LABELS: {said}")
        summary = judged_summary(scores, table, judged.flips, judged.by_construction, counts.skipped)
        meta = read_table(store.path(lanes.report_path("evaluation_summary.parquet"))).schema.metadata or {}
        summary_file = store.path(lanes.report_path(lanes.JUDGED_SUMMARY))
        write_table(
            pa.Table.from_pandas(summary, preserve_index=False).replace_schema_metadata(meta), summary_file
        )
        rows_file = store.write(judged.rows, lanes.JUDGMENTS)
        items_file = store.write(table, lanes.JUDGED_ITEMS)
        record_judged(store.path(LEDGER), question_scores(scores), usable(questions))
        shown = to_markdown(judged_table(summary))
        context.log.info(f"judged summary ({judged.asked} judge requests):\n{shown}")
        corrected = "corrected by people's labels" if counts.used else "the judge's, uncorrected"
        pages = {
            f"judged {'/'.join(served)}": dg.MetadataValue.md(
                "\n".join(f"- {line}" for line in served_lines(summary, "/".join(served))) or "not answered"
            ),
            "judged_summary": dg.MetadataValue.md(f"{shown}\n\n{SHORT_KEY}"),
        }
        shown_on(context, pages)
        return materialized(
            config_digest(
                content_version(judged.rows, JUDGMENT_COLUMNS),
                content_version(summary, SUMMARY_COLUMNS),
                content_version(table, [c for c in table.columns if c.endswith("_label")]),
            ),
            {
                "judge_version": short(model.judge_version, 60),
                "prompts_asked": judged.asked,
                "figures": corrected,
                "labels_used": counts.used,
                "labels_stale": counts.stale,
                "labels_unmatched": len(counts.unmatched),
                "labels_skipped": sum(counts.skipped.values()),
                **pages,
            },
            files=[rows_file, summary_file, items_file],
            kept={"judge_version": model.judge_version},
        )

    return judgments
