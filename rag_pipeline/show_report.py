"""Print the evaluation tables from the report files: `python -m rag_pipeline.show_report`."""

import os
import sys

from rag_pipeline.lib.core import location, read_frame
from rag_pipeline.lib.evaluation import matrix_table, reference_table, to_markdown
from rag_pipeline.settings import DEFAULT_DATA_DIR


def main() -> int:
    reports = location(os.environ.get("RAG_DATA_DIR") or str(DEFAULT_DATA_DIR)) / "reports"
    path = reports / "evaluation_summary.parquet"
    if not path.exists():
        print(f"{path}: no report yet; materialize evaluation_summary first", file=sys.stderr)
        return 1
    summary = read_frame(path)
    budget = read_frame(reports / "budget_recall.parquet")
    compared = read_frame(reports / "comparison.parquet")
    at5 = summary[summary["k"] == 5]
    print(
        f"{int(summary['n_questions'].iloc[0])} answerable questions, {int(summary['n_unanswerable'].iloc[0])} "
        f"unanswerable, {int(summary['n_unauthorized'].iloc[0])} unauthorized; at k=5 "
        f"{int(at5['leaked_units'].sum())} units leaked, under-filled at most {at5['underfilled'].max():.2f}"
    )
    print("embedding_version:")
    for version in summary["embedding_version"].unique():
        print(f"  {version}")
    print("\nThe reference experiment's table (dense retrieval):")
    print(to_markdown(reference_table(summary[summary["retriever"] == "dense"])))
    print("\nEvery configuration, best evidence recall within 4,000 characters first:")
    print(to_markdown(matrix_table(summary, budget, compared).drop(columns=["strategy", "retriever"])))
    answers = reports / "answer_summary.parquet"
    if answers.exists():
        print("\nAnswers (none: no context; oracle: the gold sections):")
        print(to_markdown(read_frame(answers).drop(columns=["llm_version"])))
    print(f"\nfull report: {reports / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
