"""Print the evaluation table from the report files: `python -m rag_pipeline.show_report`."""

import os
import sys
from pathlib import Path

import pandas as pd

from rag_pipeline.defs.resources import DEFAULT_DATA_DIR
from rag_pipeline.lib.report import seed_table, to_markdown


def main() -> int:
    reports = Path(os.environ.get("RAG_DATA_DIR") or DEFAULT_DATA_DIR) / "reports"
    path = reports / "evaluation_summary.parquet"
    if not path.exists():
        print(f"{path}: no report yet; materialize evaluation_summary first", file=sys.stderr)
        return 1
    summary = pd.read_parquet(path)
    ranks = pd.read_parquet(reports / "question_ranks.parquet")
    print(f"{int(summary['n_questions'].iloc[0])} answerable questions, embedding_version:")
    for version in summary["embedding_version"].unique():
        print(f"  {version}")
    print(to_markdown(seed_table(summary)))
    missed = ranks[ranks["answerable"] & ranks["first_evidence_rank"].isna()]
    print(
        f"\nquestions whose evidence is not in the top 20, per strategy: "
        f"{missed.groupby('strategy').size().to_dict()}"
    )
    print(f"full report: {reports / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
