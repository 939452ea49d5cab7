"""Answer stage: the configured runs, and the `none` and `oracle` baselines, answered and scored."""

import json
from collections.abc import Mapping

import dagster as dg

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.io import forward_logs
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import AnswerResource, DataStore, RetrievalResource
from rag_pipeline.lib.answers import (
    ANSWER_COLUMNS,
    SHORT_KEY,
    answer_runs,
    answer_table,
    answered_runs,
    answers_md,
    reuse_line,
    run_units,
)
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import content_version, read_table
from rag_pipeline.lib.evaluation import BASELINE_RUN, decided_rows, to_markdown
from rag_pipeline.lib.questions import questions_from_frame, usable


def verdict_choice(store: DataStore) -> tuple[str, str] | None:
    """The run the verdict chose (`reports/verdict.json`'s first `best`), None when it chose none."""
    path = store.path(lanes.report_path(lanes.VERDICT))
    best = json.loads(path.read_bytes()).get("best") if path.exists() else None
    if not best:
        return None
    strategy, _, retriever = str(best[0]).partition("/")
    return strategy, retriever or BASELINE_RUN[1]


def answers_asset(
    strategies: list[Strategy],
    baseline: tuple[str, str],
    served: tuple[str, str],
    resources: Mapping[str, object],
) -> dg.AssetsDefinition:
    @stage_asset(
        "answers",
        group="answers",
        # the answerer, the runs it answers and the context budget, and the strategies compared
        config=lambda answerer, retrieval: config_digest(
            answerer.version(), retrieval.version(), [s.name for s in strategies], served
        ),
        resources=resources,
        deps=[
            "cleaned_notes",
            "questions",
            "evaluation_summary",
            *(lanes.lane_key("retrieval", s) for s in strategies),
        ],
        description="Answers with citations for the configured runs and the `none` (no context) and "
        "`oracle` (gold sections) baselines; cached by (llm_version, prompt), scored per question.",
    )
    def answers(
        context: dg.AssetExecutionContext,
        store: DataStore,
        retrieval: RetrievalResource,
        answerer: AnswerResource,
    ) -> dg.MaterializeResult:
        cleaned_notes = store.read(lanes.CLEANED_NOTES)
        evaluated = read_table(store.path(lanes.report_path("evaluation_summary.parquet")))
        summary = decided_rows(evaluated.to_pandas())
        runs = answered_runs(answerer.runs, summary, baseline, served, verdict_choice(store))
        items, spans = questions_from_frame(usable(store.read(lanes.QUESTIONS)))
        retrieved = {s: store.read(lanes.lane_path("retrieval", s)) for s, _ in runs}
        context_size = retrieval.context_k, retrieval.context_chars
        units = run_units(retrieved, runs, items, spans, cleaned_notes, *context_size)
        llm = answerer.get()
        with forward_logs(context):
            done = answer_runs(llm, units, items, spans, answerer.repeats, store.path("answer_cache"))
        if done.reused:
            context.log.warning(reuse_line(done.reused, getattr(llm, "url", ""), llm.llm_version))
        summary_file = store.write(
            done.summary, lanes.report_path(lanes.ANSWER_SUMMARY), metadata=evaluated.schema.metadata or {}
        )
        shown = to_markdown(answer_table(done.summary))
        context.log.info(f"answer summary ({done.asked} prompts asked):\n{shown}")
        return materialized(
            content_version(done.frame, ANSWER_COLUMNS),
            {
                "llm_version": llm.llm_version,
                "prompts_asked": done.asked,
                "answers": dg.MetadataValue.md(answers_md(done.frame)),
                "answer_summary": dg.MetadataValue.md(f"{shown}\n\n{SHORT_KEY}"),
            },
            files=[store.write(done.frame, lanes.ANSWERS), summary_file],
        )

    return answers
