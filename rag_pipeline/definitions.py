"""The one Definitions object of the project: `dagster dev` and the CLI load `defs` from here."""

import os

import dagster as dg

from rag_pipeline.defs import chunks, embeddings, evaluation, retrieval, sources
from rag_pipeline.defs.resources import resources_from_env
from rag_pipeline.lib.chunking import STRATEGIES

strategies = list(STRATEGIES.values())
lanes = [
    factory(s)
    for s in strategies
    for factory in (
        chunks.chunks_asset,
        embeddings.embeddings_asset,
        retrieval.retrieval_asset,
        evaluation.evaluation_asset,
    )
]

index_and_evaluate = dg.define_asset_job(
    "index_and_evaluate", selection=dg.AssetSelection.all(), description="The whole pipeline."
)

assets = [
    sources.source_notes,
    sources.cleaned_notes,
    sources.questions,
    *lanes,
    evaluation.summary_asset(strategies),
]

defs = dg.Definitions(
    assets=assets,
    jobs=[index_and_evaluate],
    resources=resources_from_env(os.environ),
    # the steps are light glue around numpy and the in-process embedder: one process is much faster
    executor=dg.in_process_executor,
)
