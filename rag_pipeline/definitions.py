"""The one Definitions object of the project: `dagster dev` and the CLI load `defs` from here."""

import os
import warnings
from collections.abc import Iterable

import dagster as dg

from rag_pipeline.defs import answers, automation, chunks, embeddings, evaluation, retrieval, serving, sources
from rag_pipeline.defs.resources import build_resources
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.strategies import load_strategies
from rag_pipeline.settings import Settings

LANE = (
    chunks.chunks_asset,
    embeddings.embeddings_asset,
    retrieval.retrieval_asset,
    evaluation.evaluation_asset,
    serving.index_asset,
)


def build_assets(strategies: Iterable[Strategy]) -> list:
    """The source assets, one lane of assets (and the served table's check) per strategy, and the
    summaries over all lanes."""
    strategies = list(strategies)
    lanes = [factory(s) for s in strategies for factory in LANE]
    return [
        sources.notes_head,
        sources.source_notes,
        sources.cleaned_notes,
        sources.questions,
        *lanes,
        evaluation.summary_asset(strategies),
        serving.evaluation_asset(strategies),
        answers.answers_asset(strategies, evaluation.baseline_for(strategies)),
    ]


# Output(data_version=...) and observable source assets are marked beta; the incremental lineage is
# built on them knowingly, so their warnings would only be noise in every run's log.
warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)

index_and_evaluate = dg.define_asset_job(
    "index_and_evaluate",
    selection=dg.AssetSelection.all(include_sources=True),  # observes notes_head first
    description="The whole pipeline; unchanged notes, chunks and vectors are reused inside each asset.",
)


def build_definitions(settings: Settings) -> dg.Definitions:
    notes_commit_sensor, nightly_reindex = automation.build_automation(
        index_and_evaluate.name,
        branch=settings.watch_ref or settings.notes_ref,
        cron=settings.reindex_cron,
        timezone=settings.reindex_timezone,
        enabled=settings.reindex,
    )
    return dg.Definitions(
        assets=build_assets(load_strategies(settings.strategies or None, settings.strategy_file or None)),
        jobs=[index_and_evaluate],
        sensors=[notes_commit_sensor],
        schedules=[nightly_reindex],
        resources=build_resources(settings),
        # the steps are light glue around numpy and the in-process embedder: one process is faster
        # on one small machine; multiprocess runs the lanes side by side, a process per step
        executor=dg.multiprocess_executor if settings.executor == "multiprocess" else dg.in_process_executor,
    )


def reconstructable_job() -> dg.JobDefinition:
    """The job as the environment describes it now: `dg.reconstructable(reconstructable_job)` rebuilds
    it so in every step's process, which is what the multiprocess and k8s executors need."""
    return build_definitions(Settings.from_env(os.environ)).resolve_job_def(index_and_evaluate.name)


settings = Settings.from_env(os.environ)  # a bad RAG_* value fails here, when the code location loads
defs = build_definitions(settings)
assets = list(defs.assets)
