"""Asset keys and file paths: every lane's and report's name is made here and nowhere else."""

from __future__ import annotations

from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import version_key

STAGES = ("chunks", "embeddings", "retrieval", "evaluation", "index")

SOURCE_NOTES = "notes/source_notes.parquet"
CLEANED_NOTES = "notes/cleaned_notes.parquet"
QUESTIONS = "notes/questions.parquet"
ANSWERS = "answers/answers.parquet"
DB_DIR = "lancedb"
REPORTS = "reports"
# reports/ is published as a set by evaluation_summary; these files are written by other assets
ANSWER_SUMMARY = "answer_summary.parquet"
SERVING_REPORT = "serving.parquet"
SUMMARY_TABLES = ("evaluation_summary", "question_ranks", "budget_recall", "category_recall", "comparison")


def lane_key(stage: str, strategy: Strategy | str) -> str:
    """`chunks_fixed_1000`: the asset key of a strategy's lane at `stage`."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {STAGES}")
    key = strategy.key if isinstance(strategy, Strategy) else strategy.replace("-", "_")
    return f"{stage}_{key}"


def table_name(strategy: Strategy) -> str:
    """The served LanceDB table of a strategy (`fixed_1000`)."""
    return strategy.key


def lane_path(stage: str, strategy: Strategy | str) -> str:
    """A lane's Parquet file under the data directory: `chunks/fixed-1000.parquet`."""
    name = strategy.name if isinstance(strategy, Strategy) else strategy
    if stage not in ("chunks", "retrieval", "evaluation"):
        raise ValueError(f"stage {stage!r} has no lane file; embeddings use embeddings_path")
    return f"{stage}/{name}.parquet"


def embeddings_path(embedding_version: str, strategy: Strategy) -> str:
    return f"embeddings/{version_key(embedding_version)}/{strategy.name}.parquet"


def report_path(name: str) -> str:
    return f"{REPORTS}/{name}"
