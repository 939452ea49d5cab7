"""Serving stage: each strategy's chunks and vectors as a LanceDB table, and how well the tables serve."""

import json

import dagster as dg
import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs.io import data_version
from rag_pipeline.defs.resources import DataStore, EmbedderResource, NotesRepository, QuestionsFile
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.questions import asker_groups, usable
from rag_pipeline.lib.report import to_markdown
from rag_pipeline.lib.serving import MUTABLE, AnnConfig, open_table, serving_rows, sync_table
from rag_pipeline.lib.serving_eval import MIN_RECALL, RECALL_K, serving_eval, serving_problems
from rag_pipeline.lib.storage import read_table, vector_matrix, write_table
from rag_pipeline.settings import DEFAULTS

DB_DIR = "lancedb"
REPORT = "serving.parquet"
SERVING_VERSION = "serving-v1"
# what the served tables hold, and what was measured on them: latency varies from run to run
TABLE_CONTENT = ["chunk_id", "access", "embedding_version"]
MEASURED = ["strategy", "index_type", "k", "recall_vs_exact", "underfilled", "n_questions", "table_version"]


class ServingResource(dg.ConfigurableResource):
    """The served tables: searched exactly below `ann_min_rows` rows, through an IVF-PQ index above."""

    ann_min_rows: int = DEFAULTS.ann_min_rows

    def ann(self) -> AnnConfig:
        return AnnConfig(min_rows=self.ann_min_rows)


def passage_vectors(
    store: DataStore, embedding_version: str, strategy: Strategy, chunk_ids: list[str], dim: int
) -> np.ndarray:
    """The strategy's passage vectors, in the order of `chunk_ids`, from its embeddings file."""
    path = store.embeddings_path(embedding_version, strategy.name)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: no vectors for {embedding_version!r}; materialize embeddings_{strategy.key}"
        )
    table = read_table(path, columns=["chunk_id", "vector"])
    if table.column("chunk_id").to_pylist() != chunk_ids:
        raise ValueError(
            f"{path} holds other chunks than chunks_{strategy.key}: materialize embeddings_{strategy.key}"
        )
    return vector_matrix(table.column("vector"), dim)


def askers(questions: pd.DataFrame) -> list[list[str] | None]:
    """Each asker's groups, from the questions' `groups` column; None may read every row."""
    return [None if (g := asker_groups(row)) is None else list(g) for row in questions.itertuples()]


def kept_commits(frame: pd.DataFrame, served: pd.DataFrame) -> list[str]:
    """Each row's `commit`: the one it was served with while its chunk_id, access and embedding_version
    stay the same, else the current one. Every chunk carries the latest notes commit, so passing that
    through would rewrite every row (and retrain the ANN index) on every new commit."""
    columns = ["chunk_id", "embedding_version", "access", "commit"]
    before = {(c, e, tuple(a)): commit for c, e, a, commit in served[columns].itertuples(index=False)}
    return [
        before.get((c, e, tuple(a)), commit) for c, e, a, commit in frame[columns].itertuples(index=False)
    ]


def measure(
    strategy: Strategy,
    questions: pd.DataFrame,
    store: DataStore,
    embedder: EmbedderResource,
    serving: ServingResource,
) -> pd.DataFrame:
    """`serving_eval` of the strategy's table on the scored questions, with the table version and
    embedding_version it measured."""
    model = embedder.get(store)
    questions = usable(questions)
    table = open_table(store.path(DB_DIR), strategy.key)
    versions = set(table.search().select(["embedding_version"]).to_arrow()["embedding_version"].to_pylist())
    if versions - {model.embedding_version}:
        raise ValueError(
            f"table {strategy.key} holds vectors of {sorted(versions)}, not of {model.embedding_version!r}: "
            f"materialize index_{strategy.key}"
        )
    vectors, _ = embedder.embed_questions(store, questions)
    frame = serving_eval(table, strategy.name, vectors, askers(questions), ann=serving.ann())
    return frame.assign(table_version=table.version, embedding_version=model.embedding_version)


def verdict(frame: pd.DataFrame) -> dg.AssetCheckResult:
    problems = serving_problems(frame)
    at_k = frame[frame["k"] == RECALL_K]
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={
            f"min recall_vs_exact@{RECALL_K}": float(at_k["recall_vs_exact"].min()),
            "max underfilled": float(frame["underfilled"].max()),
            "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"),
        },
    )


def index_asset(strategy: Strategy) -> dg.AssetsDefinition:
    @dg.asset(
        name=f"index_{strategy.key}",
        description=f"The `{strategy.name}` chunks and their vectors as the LanceDB table `{strategy.key}` "
        f"under `{DB_DIR}/`, synced in one commit: only changed rows are written.",
        group_name="serving",
        ins={"chunks": dg.AssetIn(f"chunks_{strategy.key}")},
        deps=[f"embeddings_{strategy.key}"],
        code_version=SERVING_VERSION,
        kinds={"lancedb"},
        metadata={"strategy": strategy.name},
    )
    def _index(
        context: dg.AssetExecutionContext,
        chunks: pd.DataFrame,
        embedder: EmbedderResource,
        serving: ServingResource,
        store: DataStore,
    ) -> dg.MaterializeResult:
        model = embedder.get(store)
        ids = chunks["chunk_id"].tolist()
        vectors = passage_vectors(store, model.embedding_version, strategy, ids, model.dim)
        frame = chunks.assign(embedding_version=model.embedding_version)
        if "access" not in frame:  # no note names its readers yet: every row is public
            frame["access"] = [[] for _ in ids]
        commit = str(chunks["commit"].iloc[0]) if len(chunks) else ""
        db_dir = store.path(DB_DIR)
        if (db_dir / f"{strategy.key}.lance").exists():
            served = open_table(db_dir, strategy.key).search().select(["chunk_id", *MUTABLE]).to_pandas()
            frame["commit"] = kept_commits(frame, served)
        synced = sync_table(db_dir, strategy.key, serving_rows(frame, vectors), ann=serving.ann())
        context.log.info(f"index_{strategy.key} at {commit[:12]}: {synced}")
        return dg.MaterializeResult(
            data_version=data_version(frame, TABLE_CONTENT),
            metadata=synced
            | {
                "index_params": dg.MetadataValue.json(synced["index_params"]),
                "path": dg.MetadataValue.path(str(db_dir / f"{strategy.key}.lance")),
                "commit": commit,
            },
        )

    return _index


def synced_commit(instance: dg.DagsterInstance, strategy: Strategy) -> str:
    """The notes commit of the latest sync of the strategy's table (its rows keep older ones)."""
    event = instance.get_latest_materialization_event(dg.AssetKey(f"index_{strategy.key}"))
    if event is None or event.asset_materialization is None:
        raise ValueError(f"index_{strategy.key} was never materialized: materialize it first")
    return str(event.asset_materialization.metadata["commit"].value)


def evaluation_asset(strategies: list[Strategy]) -> dg.AssetsDefinition:
    @dg.asset(
        name="serving_evaluation",
        group_name="serving",
        code_version=SERVING_VERSION,
        kinds={"parquet", "markdown"},
        deps=[f"index_{s.key}" for s in strategies],
        check_specs=[
            dg.AssetCheckSpec(
                "recall_and_fill",
                asset="serving_evaluation",
                blocking=True,
                description=f"Every served table: recall_vs_exact@{RECALL_K} >= {MIN_RECALL} and no "
                "under-filled answer.",
            )
        ],
        description=f"Every served table searched with the questions: recall against exact search, "
        f"under-filled answers and latency per index type and k, in `reports/{REPORT}`.",
    )
    def serving_evaluation(
        context: dg.AssetExecutionContext,
        questions: pd.DataFrame,
        embedder: EmbedderResource,
        serving: ServingResource,
        store: DataStore,
        notes_repo: NotesRepository,
        questions_file: QuestionsFile,
    ) -> dg.MaterializeResult:
        commits = {s.name: synced_commit(context.instance, s) for s in strategies}
        if len(set(commits.values())) > 1:
            detail = ", ".join(f"{s} at {c[:12]}" for s, c in commits.items())
            raise ValueError(f"the served tables are synced from different notes commits ({detail})")
        commit = commits[strategies[0].name]
        frames = [measure(s, questions, store, embedder, serving) for s in strategies]
        frame = pd.concat(frames, ignore_index=True).assign(commit=commit)
        provenance = {
            "repository": notes_repo.location(),
            "commit": commit,
            "questions_file": questions_file.path,
            "questions_sha256": str(questions["questions_sha256"].iloc[0]) if len(questions) else "",
            "embedding_version": str(frame["embedding_version"].iloc[0]),
            "code_versions": json.dumps(
                {"chunkers": {s.name: s.version for s in strategies}, "serving": SERVING_VERSION}
            ),
        }
        path = store.path("reports", REPORT)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        write_table(table.replace_schema_metadata({f"rag.{k}": v for k, v in provenance.items()}), path)
        shown = frame.drop(columns=["commit", "embedding_version"])
        context.log.info(f"serving evaluation:\n{to_markdown(shown)}")
        at_k = frame[frame["k"] == RECALL_K]
        return dg.MaterializeResult(
            data_version=data_version(frame, MEASURED),
            metadata={
                "serving": dg.MetadataValue.md(to_markdown(shown)),
                f"min recall_vs_exact@{RECALL_K}": float(at_k["recall_vs_exact"].min()),
                f"max latency_p95_ms@{RECALL_K}": float(at_k["latency_p95_ms"].max()),
                "path": dg.MetadataValue.path(str(path)),
                "commit": commit,
            },
            check_results=[verdict(frame)],
        )

    return serving_evaluation
