"""Answer stage: the configured runs, and the `none` and `oracle` baselines, answered and scored."""

import dagster as dg
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs.io import forward_logs, versioned
from rag_pipeline.defs.resources import DataStore, RetrievalResource
from rag_pipeline.lib.access import may_read
from rag_pipeline.lib.answer_cache import answer_all
from rag_pipeline.lib.answer_units import NONE, ORACLE, context_units, oracle_units
from rag_pipeline.lib.answers import BASELINE_STRATEGY, answer_summary, make_prompt, score_answers
from rag_pipeline.lib.backends import make_embedder
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.llm import LLM, make_llm
from rag_pipeline.lib.questions import questions_from_frame, usable
from rag_pipeline.lib.report import to_markdown
from rag_pipeline.lib.storage import read_table, write_table
from rag_pipeline.settings import DEFAULTS

ANSWER_SUMMARY = "answer_summary.parquet"


class AnswerResource(dg.ConfigurableResource):
    """The answerer: `extractive` (no model; `model` names the embedder that picks the sentence,
    `hashing` by default so `make run` stays cheap) or a chat server, `ollama` or `openai`."""

    backend: str = DEFAULTS.llm
    url: str = DEFAULTS.llm_url
    model: str = DEFAULTS.llm_model
    runs: str = DEFAULTS.answer_runs  # strategy/retriever,...; empty: the baseline and the best run
    timeout: float = 120.0
    max_retries: int = 4
    concurrency: int = 1

    def get(self) -> LLM:
        if self.backend == "extractive":
            return make_llm("extractive", embedder=make_embedder(self.model or "hashing"))
        defaults = {
            "ollama": ("http://127.0.0.1:11434", "qwen3:4b"),
            "openai": ("https://api.openai.com", ""),
        }
        url, model = defaults.get(self.backend, ("", ""))
        options = {"timeout": self.timeout, "max_retries": self.max_retries, "concurrency": self.concurrency}
        return make_llm(self.backend, url=self.url or url, model=self.model or model, **options)


def answered_runs(setting: str, summary: pd.DataFrame, baseline: tuple[str, str]) -> list[tuple[str, str]]:
    """The runs named in `setting`, or the baseline and the best run by context recall."""
    if setting.strip():
        runs = [tuple(r.strip().split("/", 1)) for r in setting.split(",") if r.strip()]
        known = set(zip(summary["strategy"], summary["retriever"]))
        for run in runs:
            if run not in known:
                raise ValueError(
                    f"RAG_ANSWER_RUNS: {'/'.join(run)} is not an evaluated run; "
                    f"known: {', '.join(sorted('/'.join(k) for k in known))}"
                )
        return runs
    ranked = summary[summary["k"] == 1].sort_values("context_recall", ascending=False, kind="stable")
    best = (ranked["strategy"].iloc[0], ranked["retriever"].iloc[0])
    return list(dict.fromkeys([baseline, best]))


def answers_asset(strategies: list[Strategy], baseline: tuple[str, str]) -> dg.AssetsDefinition:
    @dg.asset(
        group_name="answers",
        code_version="answers-v2",
        kinds={"parquet"},
        deps=["evaluation_summary", *(f"retrieval_{s.key}" for s in strategies)],
        metadata={"storage_path": "answers/answers.parquet"},
        description="Answers with citations for the configured runs and the `none` (no context) and "
        "`oracle` (gold sections) baselines; cached by (llm_version, prompt), scored per question.",
    )
    def answers(
        context: dg.AssetExecutionContext,
        questions: pd.DataFrame,
        cleaned_notes: pd.DataFrame,
        store: DataStore,
        retrieval: RetrievalResource,
        answerer: AnswerResource,
    ) -> dg.Output:
        reports = store.path("reports")
        summary = read_table(reports / "evaluation_summary.parquet").to_pandas()
        # with no answerable question there is no best run: only the baselines are answered
        runs = answered_runs(answerer.runs, summary, baseline) if summary["n_questions"].max() > 0 else []
        items, spans = questions_from_frame(usable(questions))
        texts = dict(zip(cleaned_notes["note"], cleaned_notes["text"]))
        access = dict(zip(cleaned_notes["note"], cleaned_notes["access"]))
        settings = retrieval.settings()
        units = {(BASELINE_STRATEGY, NONE): {str(q.id): [] for q in items}}
        units[(BASELINE_STRATEGY, ORACLE)] = {
            # the gold sections the asker may read: none for an unauthorized question
            str(q.id): [
                u for u in oracle_units(spans[str(q.id)], cleaned_notes) if may_read(q.groups, access[u.note])
            ]
            for q in items
        }
        for strategy, retriever in runs:
            ranked = read_table(store.path("retrieval", f"{strategy}.parquet")).to_pandas()
            run = context_units(
                ranked[ranked["retriever"] == retriever], texts, settings.context_k, settings.context_chars
            )
            units[(strategy, retriever)] = {str(q.id): run.get(str(q.id), []) for q in items}
        llm = answerer.get()
        frames = []
        asked = 0
        with forward_logs(context):
            for (strategy, retriever), by_question in units.items():
                prompts = [make_prompt(str(q.id), q.q, by_question[str(q.id)]) for q in items]
                replies, n = answer_all(llm, prompts, store.path("answer_cache"))
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
                    )
                )
        frame = pd.concat(frames, ignore_index=True)
        table = answer_summary(frame, items)
        meta = read_table(reports / "evaluation_summary.parquet").schema.metadata or {}
        write_table(
            pa.Table.from_pandas(table, preserve_index=False).replace_schema_metadata(meta),
            reports / ANSWER_SUMMARY,
        )
        context.log.info(f"answer summary ({asked} prompts asked):\n{table.to_string(index=False)}")
        return versioned(
            frame,
            ["question_id", "strategy", "retriever", "llm_version", "answer", "cited"],
            llm_version=llm.llm_version,
            prompts_asked=asked,
            answers=dg.MetadataValue.md(answers_md(frame)),
            answer_summary=dg.MetadataValue.md(to_markdown(table.drop(columns=["llm_version"]))),
        )

    return answers


def answers_md(frame: pd.DataFrame) -> str:
    shown = frame[
        ["question_id", "strategy", "retriever", "answer", "abstained", "correct", "citation_valid"]
    ]
    return to_markdown(shown.assign(answer=shown["answer"].str.slice(0, 80)).head(200))
