"""Serving stage: each strategy's chunks and vectors as a LanceDB table, and how well the tables serve."""

import json
from collections.abc import Mapping

import dagster as dg
import pandas as pd

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import (
    DataStore,
    EmbedderResource,
    NotesRepository,
    QuestionsFile,
    ServedStore,
    ServingResource,
)
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import ColumnRows, content_version, parquet_file, write_table
from rag_pipeline.lib.core.fingerprint import fingerprint, logic
from rag_pipeline.lib.embedding import Embedder
from rag_pipeline.lib.evaluation import to_markdown
from rag_pipeline.lib.questions import askers, usable
from rag_pipeline.lib.serving import (
    DEFAULT_RETAIN,
    KS,
    MIN_RECALL,
    RECALL_K,
    KeptResults,
    LazyRows,
    Ranking,
    ServedTable,
    Store,
    serving_eval,
    serving_problems,
)
from rag_pipeline.lib.serving.reported import serving_report

# what the served tables hold, and what was measured on them: latency varies from run to run
TABLE_CONTENT = ["chunk_id", "access", "commit", "embedding_version"]
MEASURED = ["strategy", "index_type", "k", "recall_vs_exact", "underfilled", "n_questions", "table_version"]


@logic
def measure(
    strategy: Strategy,
    questions: pd.DataFrame,
    store: DataStore,
    embedder: EmbedderResource,
    serving: ServingResource,
    tables: Store,
    searched: dict[str, int],
) -> pd.DataFrame:
    """`serving_eval` of the strategy's table on the scored questions, with the table version and
    embedding_version it measured; the exact truth from the lane's `dense` ranking, and exact
    searches kept from earlier runs where they cannot have changed (`searched`: how many were not)."""
    model = embedder.get()
    questions = usable(questions)
    table = tables.open(lanes.table_name(strategy))
    versions = set(table.read(["embedding_version"])["embedding_version"].to_pylist())
    if versions - {model.embedding_version}:
        raise ValueError(
            f"table {strategy.key} holds vectors of {sorted(versions)}, not of {model.embedding_version!r}: "
            f"materialize {lanes.lane_key('index', strategy)}"
        )
    vectors, _ = embedder.embed_questions(questions)
    kept_path = store.path(lanes.SERVED_DIR, f"{strategy.name}.parquet")
    kept = KeptResults.load(kept_path, served_stamp(model.embedding_version, table))
    rankings = dense_rankings(store.read(lanes.lane_path("retrieval", strategy), columns=RANKED), questions)
    frame = serving_eval(
        table, strategy.name, vectors, askers(questions), ann=serving.ann(), rankings=rankings, kept=kept
    )
    kept.save(kept_path)
    searched[strategy.name] = kept.searched
    return frame.assign(table_version=table.version, embedding_version=model.embedding_version)


RANKED = ["question_id", "retriever", "rank", "chunk_id", "score"]


def dense_rankings(retrieval: pd.DataFrame, questions: pd.DataFrame) -> list[Ranking] | None:
    """Each question's `dense` ranking (exact cosine over its readable chunks), or None when the
    lane has no `dense` retriever (a question with no rows may read nothing)."""
    dense = retrieval[retrieval["retriever"] == "dense"]
    if dense.empty:
        return None
    dense = dense.sort_values(["question_id", "rank"])
    lists = {q: list(zip(g["chunk_id"], g["score"])) for q, g in dense.groupby("question_id", sort=False)}
    return [lists.get(q, []) for q in questions["question_id"]]


def served_stamp(embedding_version: str, table: ServedTable) -> str:
    """What a kept exact search depends on besides its query vector, its asker and the table's
    chunk ids: the vectors under those ids (a passage prefix can change them and not the query's),
    and the code that searches and measures, the store's with it."""
    code = fingerprint([serving_eval, type(table)])
    return json.dumps(
        {"ks": list(KS), "prefilter": True, "embedding_version": embedding_version, "code": code}
    )


@logic
def verdict(frame: pd.DataFrame) -> dg.AssetCheckResult:
    problems = serving_problems(frame)
    at_k = frame[frame["k"] == RECALL_K]
    return dg.AssetCheckResult(
        check_name="recall_and_fill",
        passed=not problems,
        metadata={
            f"min recall_vs_exact@{RECALL_K}": float(at_k["recall_vs_exact"].min()),
            "max underfilled": float(frame["underfilled"].max()),
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"),
        },
    )


@logic
def served_rows(store: DataStore, model: Embedder, strategy: Strategy) -> LazyRows:
    """The rows the strategy's served table holds: its chunks with their vectors, the texts and
    vectors read from the lane's files as the table takes them (a row group at a time), and the
    embedding_version that made them."""
    path = store.path(lanes.lane_path("chunks", strategy))
    light = [c for c in parquet_file(path).schema_arrow.names if c != "text"]
    chunks = store.read(lanes.lane_path("chunks", strategy), columns=light)
    ids = chunks["chunk_id"].tolist()
    vectors, _ = lanes.read_vectors(
        store, model.embedding_version, model.dim, strategy, ids, contextual=False
    )
    texts = ColumnRows(path, "text")
    return LazyRows(chunks.assign(embedding_version=model.embedding_version), vectors, texts)


def index_asset(strategy: Strategy, resources: Mapping[str, object]) -> dg.AssetsDefinition:
    table_name = lanes.table_name(strategy)

    @stage_asset(
        lanes.lane_key("index", strategy),
        group="serving",
        config=lambda embedder, serving: config_digest(embedder.version(), serving.version()),
        resources=resources,
        kinds=("lancedb",),
        deps=[lanes.lane_key("chunks", strategy), lanes.lane_key("embeddings", strategy)],
        strategy=strategy,
        description=f"The `{strategy.name}` chunks and their vectors as the LanceDB table `{table_name}` "
        f"under `{lanes.DB_DIR}/`, synced in one commit: only changed rows are written.",
    )
    def _index(
        context: dg.AssetExecutionContext,
        embedder: EmbedderResource,
        serving: ServingResource,
        served_store: ServedStore,
        store: DataStore,
    ) -> dg.MaterializeResult:
        rows = served_rows(store, embedder.get(), strategy)
        db_dir = store.path(lanes.DB_DIR)
        synced = served_store.get().sync(table_name, rows, serving.ann(), DEFAULT_RETAIN)
        context.log.info(f"{lanes.lane_key('index', strategy)}: {synced}")
        return materialized(
            content_version(rows.frame, TABLE_CONTENT),
            synced
            | {
                "index_params": dg.MetadataValue.json(synced["index_params"]),
                "path": dg.MetadataValue.path(str(db_dir / f"{table_name}.lance")),
            },
            tables=[(db_dir, table_name, synced["version"])],
        )

    return _index


def serving_evaluation_asset(
    strategies: list[Strategy], resources: Mapping[str, object]
) -> dg.AssetsDefinition:
    check = f"Every served table: recall_vs_exact@{RECALL_K} >= {MIN_RECALL} and no under-filled answer."
    names = [s.name for s in strategies]

    @stage_asset(
        "serving_evaluation",
        group="serving",
        config=lambda embedder, serving: config_digest(embedder.version(), serving.version(), names),
        resources=resources,
        kinds=("parquet", "markdown"),
        deps=[
            "source_notes",
            "questions",
            *(lanes.lane_key(stage, s) for s in strategies for stage in ("retrieval", "index")),
        ],
        checks=[("recall_and_fill", check, True)],
        description=f"Every served table searched with the questions: recall against exact search, "
        f"under-filled answers and latency per index type and k, in `reports/{lanes.SERVING_REPORT}`.",
    )
    def serving_evaluation(
        context: dg.AssetExecutionContext,
        embedder: EmbedderResource,
        serving: ServingResource,
        served_store: ServedStore,
        store: DataStore,
        notes_repo: NotesRepository,
        questions_file: QuestionsFile,
    ) -> dg.MaterializeResult:
        questions = store.read(lanes.QUESTIONS)
        commit = str(store.read(lanes.SOURCE_NOTES, columns=["commit"])["commit"].iloc[0])
        searched: dict[str, int] = {}
        tables = served_store.get()
        frames = [measure(s, questions, store, embedder, serving, tables, searched) for s in strategies]
        code = {"chunkers": {s.name: s.version for s in strategies}}
        code["serving"] = context.assets_def.code_versions_by_key[context.asset_key]
        report = serving_report(frames, questions, notes_repo.location(), commit, questions_file.path, code)
        path = store.path(lanes.report_path(lanes.SERVING_REPORT))
        write_table(report.table(), path)
        shown = to_markdown(report.shown())
        context.log.info(f"serving evaluation:\n{shown}")
        context.log.info(
            f"questions searched exactly, per table (the others' results cannot have changed): {searched}"
        )
        return materialized(
            content_version(report.frame, MEASURED),
            {
                "serving": dg.MetadataValue.md(shown),
                **report.figures(),
                "path": dg.MetadataValue.path(str(path)),
                "commit": commit,
                "questions_searched": dg.MetadataValue.json(searched),
            },
            files=[path],
            checks=[verdict(report.frame)],
        )

    return serving_evaluation
