"""Asset keys and file paths: every lane's and report's name is made here (or, for a name lib's code
writes itself, taken from lib) and nowhere else; the one check that a lane's embeddings exist and
match its chunks."""

from __future__ import annotations

from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import version_key
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.embedding import LaneMismatch, LaneVectors, read_lane
from rag_pipeline.lib.evaluation.published import COSTS_REPORT as COSTS_REPORT  # the report files
from rag_pipeline.lib.evaluation.published import VERDICT as VERDICT
from rag_pipeline.lib.questions import QUESTIONS as QUESTIONS
from rag_pipeline.lib.release import RELEASE_DIR
from rag_pipeline.lib.serving import DB_DIR as LANCEDB_DIR
from rag_pipeline.lib.serving import table_key
from rag_pipeline.lib.sources import SOURCE_NOTES as SOURCE_NOTES

STAGES = ("chunks", "embeddings", "retrieval", "evaluation", "index")

CLEANED_NOTES = "notes/cleaned_notes.parquet"
NOTES_PER_GROUP = 256  # the cleaned notes' row groups: reading a few notes whole skips the others
CHUNKS_PER_GROUP = 8192  # a chunks file's row groups: a step over a whole lane holds one at a time
GOLD_DRIFT = "notes/gold_drift.parquet"  # published as reports/gold_drift.parquet with the summary
ANSWERS = "answers/answers.parquet"
JUDGMENTS = "answers/judgments.parquet"
JUDGED_ITEMS = "answers/judged_items.parquet"  # what each judge prompt held, and people's labels
SERVED_DIR = "served"  # exact searches of the served tables kept for the next evaluation
MEASURED_COSTS = "costs/measured.parquet"  # each configuration's latency and use per question, unpriced
EMBEDDING_TIMES = "costs/embedding_times.parquet"  # each query's embedding timed once per embedder
PRICED_COSTS = "costs/priced.parquet"  # and priced, the budgets they are held against in its metadata
REPORTS = "reports"
# reports/ is published as a set by evaluation_summary, which replaces only the files it wrote
# (a user's stay); these are written by other assets
ANSWER_SUMMARY = "answer_summary.parquet"
JUDGED_SUMMARY = "judged_summary.parquet"
SERVING_REPORT = "serving.parquet"
DB_DIR = LANCEDB_DIR  # the served LanceDB tables
RELEASE = RELEASE_DIR  # current.json, history.parquet, questions.parquet
SUMMARY_TABLES = ("evaluation_summary", "question_ranks", "budget_recall", "category_recall", "comparison")


def lane_key(stage: str, strategy: Strategy | str) -> str:
    """`chunks_fixed_1000`: the asset key of a strategy's lane at `stage`."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {STAGES}")
    key = strategy.key if isinstance(strategy, Strategy) else strategy.replace("-", "_")
    return f"{stage}_{key}"


def table_name(strategy: Strategy) -> str:
    """The served LanceDB table of a strategy (`fixed_1000`)."""
    return table_key(strategy.name)


def lane_path(stage: str, strategy: Strategy | str) -> str:
    """A lane's Parquet file under the data directory: `chunks/fixed-1000.parquet`."""
    name = strategy.name if isinstance(strategy, Strategy) else strategy
    if stage not in ("chunks", "retrieval", "evaluation"):
        raise ValueError(f"stage {stage!r} has no lane file; embeddings use embeddings_path")
    return f"{stage}/{name}.parquet"


def shard_key(stage: str, strategy: Strategy, shard: int) -> str:
    """`chunks_fixed_1000_shard_2`: the asset of one shard of a lane (`RAG_SHARDS` > 1)."""
    return f"{lane_key(stage, strategy)}_shard_{shard}"


def shard_path(strategy: Strategy, shard: int, shards: int) -> str:
    """A shard's chunks (`chunks/fixed-1000.shards/2-of-4.parquet`): the lane's file joins them."""
    return f"chunks/{strategy.name}.shards/{shard}-of-{shards}.parquet"


def cleaned_shard_key(shard: int) -> str:
    """`cleaned_notes_shard_2`: the cleaned notes of one shard (`RAG_SHARDS` > 1)."""
    return f"cleaned_notes_shard_{shard}"


def cleaned_shard_path(shard: int, shards: int) -> str:
    """A shard's cleaned notes (`notes/cleaned_notes.shards/2-of-4.parquet`): `CLEANED_NOTES` joins them."""
    return f"notes/cleaned_notes.shards/{shard}-of-{shards}.parquet"


def embeddings_path(embedding_version: str, strategy: Strategy) -> str:
    """A lane's embeddings directory (`BUCKETS` Parquet files; pandas reads it as one table)."""
    return f"embeddings/{version_key(embedding_version)}/{strategy.name}.parquet"


def report_path(name: str) -> str:
    return f"{REPORTS}/{name}"


@logic
def read_vectors(
    store,
    embedding_version: str,
    dim: int,
    strategy: Strategy,
    chunk_ids: list[str],
    contextual: bool,
) -> tuple[LaneVectors, LaneVectors | None]:
    """The strategy's passage vectors (and contextual ones, when asked and built) in the order of
    `chunk_ids`, from its embeddings directory, read by row group as they are indexed; an error naming
    the asset to materialize when a file is missing or the files hold other chunks."""
    path = store.path(embeddings_path(embedding_version, strategy))
    asset = lane_key("embeddings", strategy)
    try:
        return read_lane(path, dim, chunk_ids, contextual)
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"{exc}: no embeddings of {strategy.name!r} for embedding_version {embedding_version!r}; "
            f"materialize {asset} first"
        ) from None
    except LaneMismatch:
        raise ValueError(
            f"{path} holds other chunks than {lane_key('chunks', strategy)}: materialize {asset}"
        ) from None
