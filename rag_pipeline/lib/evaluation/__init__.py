"""Metrics from per-question outcomes, the report's tables, plots and Markdown."""

from rag_pipeline.lib.evaluation.markdown import SHOWN, headline_md, plain, short, to_markdown
from rag_pipeline.lib.evaluation.metrics import (
    REPORT_KS,
    EvidenceSpan,
    access_at,
    holds,
    question_outcomes,
    recall_at_k,
    relevant_column,
    summarize,
)
from rag_pipeline.lib.evaluation.plots import heatmap, pareto_front, pareto_plot, pareto_points, recall_grid
from rag_pipeline.lib.evaluation.report import Report, build_report
from rag_pipeline.lib.evaluation.runs import (
    headline_numbers,
    report_provenance,
    same_chunks,
    strategy_outcomes,
)
from rag_pipeline.lib.evaluation.significance import paired_randomization
from rag_pipeline.lib.evaluation.tables import glance_tables, matrix_table, records, reference_table
from rag_pipeline.lib.evaluation.verdict import verdict

__all__ = [
    "REPORT_KS",
    "SHOWN",
    "EvidenceSpan",
    "Report",
    "access_at",
    "build_report",
    "glance_tables",
    "headline_md",
    "headline_numbers",
    "heatmap",
    "holds",
    "matrix_table",
    "paired_randomization",
    "pareto_front",
    "pareto_plot",
    "pareto_points",
    "plain",
    "question_outcomes",
    "recall_at_k",
    "recall_grid",
    "records",
    "reference_table",
    "relevant_column",
    "report_provenance",
    "same_chunks",
    "short",
    "strategy_outcomes",
    "summarize",
    "to_markdown",
    "verdict",
]
