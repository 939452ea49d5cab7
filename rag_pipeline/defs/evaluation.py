"""Evaluation stage: per-question outcomes per strategy, then every configuration side by side."""

import dagster as dg
import pandas as pd

from rag_pipeline.defs.resources import DataStore, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.incremental import content_version
from rag_pipeline.lib.metrics import REPORT_KS, question_outcomes, summarize
from rag_pipeline.lib.questions import questions_from_frame
from rag_pipeline.lib.report import build_report
from rag_pipeline.lib.storage import write_bytes, write_frame

RUN_KEYS = ["strategy", "retriever", "embedding_version"]
BASELINE = ("fixed-1000", "dense")


def evaluation_asset(strategy: Strategy) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"evaluation_{strategy.key}",
        group_name="evaluation",
        code_version="evaluation-v2",
        kinds={"parquet"},
        ins={"retrieval": dg.AssetIn(f"retrieval_{strategy.key}")},
        metadata={"storage_path": f"evaluation/{strategy.name}.parquet", "strategy": strategy.name},
        description=f"Per-question note and evidence ranks and characters passed for `{strategy.name}`, "
        "per retriever configuration.",
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
            outcomes["analyzer"] = run["analyzer"].iloc[0]
            outcomes["n_chunks"] = int(run["n_chunks"].iloc[0])
            frames.append(outcomes)
        frame = pd.concat(frames, ignore_index=True)
        metadata = {}
        for retriever, outcomes in frame.groupby("retriever", sort=False):
            at = summarize(outcomes, REPORT_KS).set_index("k")
            metadata |= {
                f"{retriever} evidence_recall@{k}": float(at.at[k, "evidence_recall"]) for k in (1, 5)
            }
        return dg.Output(
            frame, data_version=dg.DataVersion(content_version(frame, list(frame.columns))), metadata=metadata
        )

    return _evaluation


def summary_asset(strategies: list[Strategy]) -> dg.AssetsDefinition:
    # RAG_STRATEGIES may leave the baseline's strategy out: then the first strategy's dense run stands in
    names = [s.name for s in strategies]
    baseline = BASELINE if BASELINE[0] in names else (names[0], BASELINE[1])

    @dg.asset(
        name="evaluation_summary",
        group_name="evaluation",
        code_version="summary-v2",
        kinds={"parquet", "markdown"},
        ins={f"evaluation_{s.key}": dg.AssetIn() for s in strategies},
        description="Every strategy x retriever configuration side by side: recall, MRR, nDCG, candidate "
        "recall, recall at equal character budgets, per category, paired comparison with the baseline; "
        "tables and plots in the UI and under `reports/`.",
    )
    def evaluation_summary(
        context: dg.AssetExecutionContext,
        store: DataStore,
        retrieval: RetrievalResource,
        **evaluations: pd.DataFrame,
    ):
        outcomes = pd.concat([evaluations[f"evaluation_{s.key}"] for s in strategies], ignore_index=True)
        report = build_report(outcomes, RUN_KEYS, retrieval.settings(), baseline)
        reports = store.path("reports")
        for name, frame in report.tables.items():
            write_frame(frame, reports / f"{name}.parquet")
        for name, png in report.plots.items():
            write_bytes(png, reports / f"{name}.png")
        write_bytes(report.markdown.encode(), reports / "report.md")
        context.log.info(f"evaluation summary:\n{report.matrix_md}")
        return dg.MaterializeResult(
            data_version=dg.DataVersion(
                content_version(
                    report.tables["evaluation_summary"], list(report.tables["evaluation_summary"].columns)
                )
            ),
            metadata={
                "configurations": dg.MetadataValue.md(report.matrix_md),
                "plots": dg.MetadataValue.md(report.plots_md),
                "seed_table": dg.MetadataValue.md(report.seed_md),
                "per_category": dg.MetadataValue.md(report.category_md),
                "first_evidence_ranks": dg.MetadataValue.md(report.ranks_md),
                "report": dg.MetadataValue.path(str(reports / "report.md")),
            },
        )

    return evaluation_summary
