"""Evaluation stage: per-question outcomes per strategy, then every strategy side by side."""

import dagster as dg
import pandas as pd

from rag_pipeline.defs.resources import DataStore
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.incremental import content_version
from rag_pipeline.lib.metrics import REPORT_KS, question_outcomes, summarize
from rag_pipeline.lib.questions import questions_from_frame
from rag_pipeline.lib.report import inline_png, rank_table, recall_plots, seed_table, to_markdown
from rag_pipeline.lib.storage import write_bytes, write_frame

RUN_KEYS = ["strategy", "retriever", "embedding_version"]


def evaluation_asset(strategy: Strategy) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"evaluation_{strategy.key}",
        group_name="evaluation",
        code_version="evaluation-v1",
        kinds={"parquet"},
        ins={"retrieval": dg.AssetIn(f"retrieval_{strategy.key}")},
        metadata={"storage_path": f"evaluation/{strategy.name}.parquet", "strategy": strategy.name},
        description=f"Per-question note and evidence ranks and characters passed for `{strategy.name}`.",
    )
    def _evaluation(
        context: dg.AssetExecutionContext, questions: pd.DataFrame, retrieval: pd.DataFrame
    ) -> dg.Output:
        items, spans = questions_from_frame(questions)
        frames = []
        for (retriever, version), run in retrieval.groupby(["retriever", "embedding_version"], sort=False):
            outcomes = question_outcomes(items, spans, run)
            outcomes.insert(0, "strategy", strategy.name)
            outcomes.insert(1, "retriever", retriever)
            outcomes.insert(2, "embedding_version", version)
            outcomes["n_chunks"] = int(run["n_chunks"].iloc[0])
            frames.append(outcomes)
        frame = pd.concat(frames, ignore_index=True)
        at = summarize(frame, REPORT_KS).set_index("k")
        return dg.Output(
            frame,
            data_version=dg.DataVersion(content_version(frame, list(frame.columns))),
            metadata={f"evidence_recall@{k}": float(at.at[k, "evidence_recall"]) for k in REPORT_KS}
            | {f"note_recall@{k}": float(at.at[k, "note_recall"]) for k in REPORT_KS}
            | {"mrr@10": float(at.at[10, "mrr"]), "chars_median@5": float(at.at[5, "chars_median"])},
        )

    return _evaluation


def summary_asset(strategies: list[Strategy]) -> dg.AssetsDefinition:
    @dg.asset(
        name="evaluation_summary",
        group_name="evaluation",
        code_version="summary-v1",
        kinds={"parquet", "markdown"},
        ins={f"evaluation_{s.key}": dg.AssetIn() for s in strategies},
        description="Every strategy side by side: the recall table, first-evidence ranks and two plots, "
        "written under `reports/`.",
    )
    def evaluation_summary(context: dg.AssetExecutionContext, store: DataStore, **evaluations: pd.DataFrame):
        outcomes = pd.concat([evaluations[f"evaluation_{s.key}"] for s in strategies], ignore_index=True)
        summary = pd.concat(
            [
                summarize(run).assign(**dict(zip(RUN_KEYS, keys)), n_chunks=int(run["n_chunks"].iloc[0]))
                for keys, run in outcomes.groupby(RUN_KEYS, sort=False)
            ],
            ignore_index=True,
        )
        summary = summary[RUN_KEYS + [c for c in summary.columns if c not in RUN_KEYS]]
        ranks = outcomes[
            [*RUN_KEYS, "question_id", "category", "answerable", "note_rank", "first_evidence_rank"]
        ]
        table = to_markdown(seed_table(summary))
        per_question = to_markdown(rank_table(ranks))
        by_k, by_chars = recall_plots(summary)

        reports = store.path("reports")
        write_frame(summary, reports / "evaluation_summary.parquet")
        write_frame(ranks, reports / "question_ranks.parquet")
        write_bytes(by_k, reports / "recall_at_k.png")
        write_bytes(by_chars, reports / "recall_vs_chars.png")
        versions = ", ".join(f"`{v}`" for v in summary["embedding_version"].unique())
        header = (
            f"{int(summary['n_questions'].iloc[0])} answerable questions "
            f"({int(summary['n_unanswerable'].iloc[0])} unanswerable kept apart); embedding_version {versions}"
        )
        report = (
            f"# Retrieval evaluation\n\n{header}\n\n{table}\n\n"
            "![evidence recall against k](recall_at_k.png)\n![evidence recall against characters passed]"
            "(recall_vs_chars.png)\n\n## Rank of the first chunk holding the evidence (- = not in top 20)\n\n"
            f"{per_question}\n"
        )
        write_bytes(report.encode(), reports / "report.md")
        context.log.info(f"evaluation summary ({header}):\n{table}")
        return dg.MaterializeResult(
            data_version=dg.DataVersion(content_version(summary, list(summary.columns))),
            metadata={
                "summary": dg.MetadataValue.md(f"{header}\n\n{table}"),
                "plots": dg.MetadataValue.md(
                    inline_png(by_k, "evidence recall against k")
                    + "\n\n"
                    + inline_png(by_chars, "evidence recall against characters passed")
                ),
                "first_evidence_ranks": dg.MetadataValue.md(per_question),
                "report": dg.MetadataValue.path(str(reports / "report.md")),
                "summary_parquet": dg.MetadataValue.path(str(reports / "evaluation_summary.parquet")),
            },
        )

    return evaluation_summary
