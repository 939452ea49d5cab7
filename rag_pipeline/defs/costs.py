"""Costs stage: what each configuration costs an application per question, measured on the served
tables (`lib/serving/costs.py`), then priced and held against the budgets (`lib/evaluation/budgets.py`):
the verdict chooses within them, and the release gate serves no configuration over them.

The pricing is an asset of its own so that an edited price or budget re-decides exactly the verdict
(`evaluation_summary`, whose data version stays the report's, so the answers are not asked again)
and the release, and re-measures nothing."""

from collections.abc import Mapping

import dagster as dg
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import (
    DataStore,
    EmbedderResource,
    ReleaseResource,
    RetrievalResource,
    ServedStore,
    ServingResource,
)
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import content_version, write_table
from rag_pipeline.lib.evaluation import Costs, over_budget, priced, to_markdown
from rag_pipeline.lib.questions import usable
from rag_pipeline.lib.serving.measured import asked_questions, measured_costs


def costs_asset(strategies: list[Strategy], resources: Mapping[str, object]) -> dg.AssetsDefinition:
    names = [s.name for s in strategies]

    @stage_asset(
        "costs",
        group="serving",
        # the query embedder, every retrieval setting (the reranker among them), the index, the strategies
        config=lambda embedder, retrieval, serving: config_digest(
            embedder.version(), retrieval.version(), serving.version(), names
        ),
        resources=resources,
        # the retrieval lanes first: the questions' vectors are theirs, from the vector store
        deps=[
            "questions",
            *(lanes.lane_key(stage, s) for s in strategies for stage in ("chunks", "retrieval", "index")),
        ],
        description="Every configuration asked each question once as an application asks it (the query "
        "embedded, the served table searched, BM25, fusion, rerank, parents): retrieval's latency "
        "p50/p95 and what a question consumes, for the report's costs and the budgets.",
    )
    def costs(
        context: dg.AssetExecutionContext,
        store: DataStore,
        embedder: EmbedderResource,
        retrieval: RetrievalResource,
        serving: ServingResource,
        served_store: ServedStore,
    ) -> dg.MaterializeResult:
        questions = usable(store.read(lanes.QUESTIONS))
        model = embedder.get()
        vectors, _ = embedder.embed_questions(questions)  # from the vector store, as retrieval's
        asked = asked_questions(questions, vectors, model, store.path(lanes.EMBEDDING_TIMES))

        def chunks(name: str) -> pd.DataFrame:
            return store.read(lanes.lane_path("chunks", name))

        measured = measured_costs(
            names, chunks, served_store.get(), asked, retrieval.ranking(), serving.ann(), store.path()
        )
        frame = measured.assign(
            embedder=embedder.backend,
            embed_model=embedder.model,
            reranker=retrieval.rerank_protocol if retrieval.rerank_url else "",
            rerank_model=retrieval.rerank_model,
            embedding_version=model.embedding_version,
        )
        path = store.write(frame, lanes.MEASURED_COSTS)
        shown = frame[["strategy", "retriever", "latency_p50_ms", "latency_p95_ms"]]
        context.log.info(f"retrieval latency per question, ms:\n{to_markdown(shown)}")
        return materialized(
            content_version(frame, list(frame.columns)),  # measured: a new measurement re-decides
            {
                "latency": dg.MetadataValue.md(to_markdown(shown)),
                "max latency_p95_ms": float(frame["latency_p95_ms"].max()),
                "questions": len(questions),
            },
            files=[path],
        )

    return costs


def budgets_asset(resources: Mapping[str, object]) -> dg.AssetsDefinition:
    @stage_asset(
        "budgets",
        group="release",
        config=lambda release: release.budgets_version(),  # the budgets, the prices file's bytes
        resources=resources,
        deps=["costs"],
        description="Each configuration's costs priced by RAG_PRICES (per 1,000 questions) and held against "
        "RAG_BUDGET_LATENCY_P95_MS and RAG_BUDGET_COST_PER_1K: the configurations over budget, which the "
        "verdict does not choose and the release gate does not serve.",
    )
    def budgets(
        context: dg.AssetExecutionContext, store: DataStore, release: ReleaseResource
    ) -> dg.MaterializeResult:
        prices = release.read_prices()
        costs = Costs(priced(store.read(lanes.MEASURED_COSTS), prices), release.budgets(), prices)
        path = store.path(lanes.PRICED_COSTS)
        table = pa.Table.from_pandas(costs.figures, preserve_index=False)
        write_table(table.replace_schema_metadata(costs.metadata()), path)
        over = over_budget(costs)
        shown = costs.figures[["configuration", "latency_p95_ms", "cost_per_1k"]]
        return materialized(
            config_digest(content_version(costs.figures, list(costs.figures.columns)), costs.entry()),
            {
                "costs": dg.MetadataValue.md(
                    f"{to_markdown(shown)}\n\ncost per 1,000 questions in {prices.currency}"
                ),
                "budgets": dg.MetadataValue.json(costs.entry()),
                "over_budget": dg.MetadataValue.json(over),
            },
            files=[path],
        )

    return budgets
