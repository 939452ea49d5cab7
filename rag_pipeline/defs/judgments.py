"""Judging stage: every answer judged on `faithful`, `correct` and `cites_support`, repeated; people's
labels correct the judge's mean (PPI); the bias checks; `reports/judged_summary.parquet`."""

from collections.abc import Mapping
from pathlib import Path

import dagster as dg
import pandas as pd

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.io import forward_logs
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, JudgeResource, RetrievalResource
from rag_pipeline.lib.answers import run_units
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import read_table
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.evaluation import LEDGER, record_judged, to_markdown
from rag_pipeline.lib.judging import (
    LabelsError,
    judge_answers,
    judged_runs,
    judged_table,
    read_labels,
)
from rag_pipeline.lib.questions import questions_from_frame, usable


@logic
def labels_of(judge: JudgeResource) -> pd.DataFrame:
    """People's labels from RAG_JUDGE_LABELS (none when it is unset)."""
    path = Path(judge.labels) if judge.labels else None
    if path is not None and not path.exists():
        raise LabelsError(f"RAG_JUDGE_LABELS={path}: no such file")
    return read_labels(path)


def shown_on(context: dg.AssetExecutionContext, pages: Mapping[str, str]) -> dict[str, object]:
    """The judged summary's Markdown `pages`, as metadata, on the pages of `answers` and
    `evaluation_summary` too, as an observation of each: Dagster's automation and stale status read
    only materializations of an asset that is materialized, so an observation changes nothing of
    what runs."""
    metadata = {name: dg.MetadataValue.md(text) for name, text in pages.items()}
    for key in ("answers", "evaluation_summary"):
        context.log_event(dg.AssetObservation(asset_key=key, metadata=dict(metadata)))
    return metadata


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
        answers, questions = store.read(lanes.ANSWERS), store.read(lanes.QUESTIONS)
        cleaned_notes = store.read(lanes.CLEANED_NOTES)
        asked, spans = questions_from_frame(usable(questions))
        runs = judged_runs(answers)  # the passages each answered run was given, rebuilt
        retrieved = {s: store.read(lanes.lane_path("retrieval", s)) for s, _ in runs}
        context_size = retrieval.context_k, retrieval.context_chars
        units = run_units(retrieved, runs, asked, spans, cleaned_notes, *context_size)
        model = judge.get()
        with forward_logs(context):
            done = judge_answers(
                model, judge.times(model), judge.bias_sample, answers, units, asked, cleaned_notes, labels
            )
        if said := done.counts.warning():
            context.log.warning(f"RAG_JUDGE_LABELS: {said}")
        meta = read_table(store.path(lanes.report_path("evaluation_summary.parquet"))).schema.metadata
        rows_file = store.write(done.rows, lanes.JUDGMENTS)
        summary_file = store.write(done.summary, lanes.report_path(lanes.JUDGED_SUMMARY), metadata=meta or {})
        record_judged(store.path(LEDGER), done.scores, usable(questions))
        shown = to_markdown(judged_table(done.summary))
        context.log.info(f"judged summary ({done.asked} judge requests):\n{shown}")
        pages = shown_on(context, done.pages("/".join(served)))
        return materialized(
            config_digest(*done.content_versions()),
            done.figures(model.judge_version) | pages,
            files=[rows_file, summary_file, store.write(done.items, lanes.JUDGED_ITEMS)],
            kept={"judge_version": model.judge_version},
        )

    return judgments
