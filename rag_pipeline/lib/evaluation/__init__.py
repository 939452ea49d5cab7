"""Metrics from per-question outcomes, the report's tables, plots and Markdown, the verdict chosen on
the development questions and confirmed on the test questions, and the experiment ledger."""

from rag_pipeline.lib.evaluation.budgets import (
    Budgets,
    Costs,
    budgeted_verdict,
    over_budget,
    reported_costs,
    with_costs,
)
from rag_pipeline.lib.evaluation.confirmation import split_figures, split_table
from rag_pipeline.lib.evaluation.experiments import (
    LEDGER,
    NOT_RECORDED,
    REPAIR,
    LedgerError,
    record_experiment,
)
from rag_pipeline.lib.evaluation.judged import record_judged
from rag_pipeline.lib.evaluation.looks import (
    Reuse,
    Split,
    experiment_reuse,
    experiment_split,
    import_looks,
    looks_sentence,
    read_looks,
    record_confirmed,
    record_look,
    reuse,
)
from rag_pipeline.lib.evaluation.markdown import SHOWN, headline_md, plain, short, to_markdown
from rag_pipeline.lib.evaluation.metrics import (
    BASELINE_RUN,
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
from rag_pipeline.lib.evaluation.prices import Prices, PricesError, answer_cost_per_1k, priced, read_prices
from rag_pipeline.lib.evaluation.published import Published, load_drawn, published_report
from rag_pipeline.lib.evaluation.ranked import Ranked, Ranking, ranked_lane
from rag_pipeline.lib.evaluation.repair import repair
from rag_pipeline.lib.evaluation.report import Report
from rag_pipeline.lib.evaluation.runs import (
    headline_numbers,
    report_provenance,
    same_chunks,
    strategy_outcomes,
)
from rag_pipeline.lib.evaluation.sets import (
    SOURCES,
    build_report,
    decided_rows,
    question_sets,
    rank_agreement,
)
from rag_pipeline.lib.evaluation.significance import holm, paired_randomization
from rag_pipeline.lib.evaluation.tables import (
    Reported,
    glance_tables,
    matrix_table,
    records,
    reference_table,
    run_label,
    shown_matrix,
)
from rag_pipeline.lib.evaluation.verdict import verdict
from rag_pipeline.lib.evaluation.versus import (
    Comparison,
    UnknownReference,
    compare,
    compare_all,
    previous_md,
    resolve,
)

__all__ = [
    "BASELINE_RUN",
    "LEDGER",
    "NOT_RECORDED",
    "REPAIR",
    "REPORT_KS",
    "SHOWN",
    "SOURCES",
    "Budgets",
    "Comparison",
    "Costs",
    "EvidenceSpan",
    "LedgerError",
    "Prices",
    "PricesError",
    "Published",
    "Ranked",
    "Ranking",
    "Report",
    "Reported",
    "Reuse",
    "Split",
    "UnknownReference",
    "access_at",
    "answer_cost_per_1k",
    "budgeted_verdict",
    "build_report",
    "compare",
    "compare_all",
    "decided_rows",
    "experiment_reuse",
    "experiment_split",
    "glance_tables",
    "headline_md",
    "headline_numbers",
    "heatmap",
    "holds",
    "holm",
    "import_looks",
    "load_drawn",
    "looks_sentence",
    "matrix_table",
    "over_budget",
    "paired_randomization",
    "pareto_front",
    "pareto_plot",
    "pareto_points",
    "plain",
    "previous_md",
    "priced",
    "published_report",
    "question_outcomes",
    "question_sets",
    "rank_agreement",
    "ranked_lane",
    "read_looks",
    "read_prices",
    "recall_at_k",
    "recall_grid",
    "record_confirmed",
    "record_experiment",
    "record_judged",
    "record_look",
    "records",
    "reference_table",
    "relevant_column",
    "repair",
    "report_provenance",
    "reported_costs",
    "resolve",
    "reuse",
    "run_label",
    "same_chunks",
    "short",
    "shown_matrix",
    "split_figures",
    "split_table",
    "strategy_outcomes",
    "summarize",
    "to_markdown",
    "verdict",
    "with_costs",
]
