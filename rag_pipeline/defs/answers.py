"""Answer stage: the configured runs, and the `none` and `oracle` baselines, answered and scored."""

import json
from collections import Counter
from collections.abc import Mapping

import dagster as dg
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.io import forward_logs
from rag_pipeline.defs.platform.lanes import run_units
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import AnswerResource, DataStore, RetrievalResource
from rag_pipeline.lib.answers import (
    BASELINE_STRATEGY,
    SHORT_KEY,
    answer_all,
    answer_summary,
    answer_table,
    make_prompt,
    reuse_line,
    score_answers,
)
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import content_version, read_table, write_table
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.evaluation import BASELINE_RUN, decided_rows, to_markdown
from rag_pipeline.lib.questions import questions_from_frame, usable


@logic
def answered_runs(
    setting: str,
    summary: pd.DataFrame,
    baseline: tuple[str, str],
    served: tuple[str, str],
    chosen: tuple[str, str] | None,
) -> list[tuple[str, str]]:
    """The runs named in `setting`, or the baseline and the verdict's `chosen` run (chosen on the
    development questions: no test question picks what is answered); and the `served` run (the
    release run, whose abstention the release gate compares) in any case."""
    if setting.strip():
        runs = [tuple(r.strip().split("/", 1)) for r in setting.split(",") if r.strip()]
        known = set(zip(summary["strategy"], summary["retriever"]))
        for run in runs:
            if run not in known:
                raise ValueError(
                    f"RAG_ANSWER_RUNS: {'/'.join(run)} is not an evaluated run; "
                    f"known: {', '.join(sorted('/'.join(k) for k in known))}"
                )
        return list(dict.fromkeys([*runs, served]))
    return list(dict.fromkeys([baseline, *([chosen] if chosen else []), served]))


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
    names = [s.name for s in strategies]

    @stage_asset(
        "answers",
        group="answers",
        # the answerer, the runs it answers and the context budget, and the strategies compared
        config=lambda answerer, retrieval: config_digest(
            answerer.version(), retrieval.version(), names, served
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
        questions = store.read(lanes.QUESTIONS)
        cleaned_notes = store.read(lanes.CLEANED_NOTES)
        summary_path = store.path(lanes.report_path("evaluation_summary.parquet"))
        summary = decided_rows(read_table(summary_path).to_pandas())
        # with no answerable question there is no best run: only the baselines are answered
        runs = (
            answered_runs(answerer.runs, summary, baseline, served, verdict_choice(store))
            if summary["n_questions"].max() > 0
            else []
        )
        items, spans = questions_from_frame(usable(questions))
        units = run_units(store, retrieval, strategies, runs, items, spans, cleaned_notes)
        llm = answerer.get()
        frames = []
        asked, reused = 0, Counter()  # replies another server gave, by server
        with forward_logs(context):
            for (strategy, retriever), by_question in units.items():
                prompts = [make_prompt(str(q.id), q.q, by_question[str(q.id)]) for q in items]
                for repeat in range(answerer.repeats):
                    replies, n = answer_all(
                        llm, prompts, store.path("answer_cache"), repeat=repeat, reused=reused
                    )
                    asked += n
                    frames.append(
                        score_answers(
                            prompts,
                            replies,
                            items,
                            spans,
                            strategy=strategy,
                            retriever=retriever,
                            llm_version=llm.llm_version,
                            repeat=repeat,
                        )
                    )
        if reused:
            context.log.warning(reuse_line(reused, getattr(llm, "url", ""), llm.llm_version))
        frame = pd.concat(frames, ignore_index=True)
        table = answer_summary(frame, items)
        meta = read_table(summary_path).schema.metadata or {}
        summary_file = store.path(lanes.report_path(lanes.ANSWER_SUMMARY))
        write_table(
            pa.Table.from_pandas(table, preserve_index=False).replace_schema_metadata(meta), summary_file
        )
        path = store.write(frame, lanes.ANSWERS)
        context.log.info(f"answer summary ({asked} prompts asked):\n{to_markdown(answer_table(table))}")
        return materialized(
            content_version(
                frame,
                ["question_id", "split", "strategy", "retriever", "llm_version", "repeat", "answer", "cited"],
            ),
            {
                "llm_version": llm.llm_version,
                "prompts_asked": asked,
                "answers": dg.MetadataValue.md(answers_md(frame)),
                "answer_summary": dg.MetadataValue.md(f"{to_markdown(answer_table(table))}\n\n{SHORT_KEY}"),
            },
            files=[path, summary_file],
        )

    return answers


def answers_md(frame: pd.DataFrame) -> str:
    shown = frame[
        ["question_id", "strategy", "retriever", "answer", "abstained", "correct", "citation_valid"]
    ]
    runs = [
        r if s == BASELINE_STRATEGY else f"{s}/{r}" for s, r in zip(shown["strategy"], shown["retriever"])
    ]
    shown = shown.drop(columns=["strategy", "retriever"]).assign(answer=shown["answer"].str.slice(0, 60))
    return to_markdown(
        shown.assign(run=runs)[
            ["question_id", "run", "answer", "abstained", "correct", "citation_valid"]
        ].head(200)
    )
