"""The one Definitions object of the project: `dagster dev` and the CLI load `defs` from here."""

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import dagster as dg

from rag_pipeline.defs import (
    answers,
    chunks,
    costs,
    embeddings,
    evaluation,
    judgments,
    questions,
    release,
    retrieval,
    serving,
    sources,
)
from rag_pipeline.defs.platform import automation, conditions
from rag_pipeline.defs.platform.executors import executor_for
from rag_pipeline.defs.platform.identity import identified
from rag_pipeline.defs.platform.lanes import cleaned_shard_key, shard_key
from rag_pipeline.defs.platform.lease import leased
from rag_pipeline.defs.platform.runs import DATA_DIR_TAG, GRAPH_TAG, data_dir_name, graph_tag, settings_tags
from rag_pipeline.defs.resources import (
    AnswerResource,
    DataStore,
    EmbedderResource,
    JudgeResource,
    NotesRepository,
    QuestionsFile,
    ReleaseResource,
    RetrievalResource,
    ServedStore,
    ServingResource,
)
from rag_pipeline.lib.chunking import Strategy, load_strategies
from rag_pipeline.lib.core import shown_path
from rag_pipeline.lib.evaluation import PricesError
from rag_pipeline.lib.judging import LabelsError, read_labels
from rag_pipeline.lib.retrieval import plan
from rag_pipeline.settings import DEFAULTS, Settings, SettingsError

JOB = "index_and_evaluate"
# the assets and checks one automation sensor evaluates, and so one `make run` plans (Dagster's limit)
MAX_ENTITIES = 500


def build_resources(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    """The resources the settings describe, bound to their keys (run config may still override
    them per run); those that read or write the data directory get the one `store`."""
    store = DataStore.from_settings(settings)
    return {
        "store": store,
        # the automation (sensor and `make run` alike) follows RAG_WATCH_REF when it is set
        "notes_repo": NotesRepository.from_settings(
            settings.replace(notes_ref=settings.watch_ref or settings.notes_ref), store=store
        ),
        "questions_file": QuestionsFile.from_settings(settings),
        "embedder": EmbedderResource.from_settings(settings, store=store),
        "retrieval": RetrievalResource.from_settings(settings),
        "serving": ServingResource.from_settings(settings),
        "served_store": ServedStore.from_settings(settings, store=store),
        "answerer": AnswerResource.from_settings(settings),
        "judge": JudgeResource.from_settings(settings, store=store),
        "release": ReleaseResource.from_settings(settings),
    }


def resources_from_env(env: Mapping[str, str]) -> dict[str, dg.ConfigurableResource]:
    return build_resources(Settings.from_env(env))


def build_assets(
    strategies: Iterable[Strategy],
    resources: Mapping[str, object] | None = None,
    retry_after: tuple[float, ...] = DEFAULTS.retry_after,
    shards: int = DEFAULTS.shards,
) -> list:
    """The source assets, one lane of assets per strategy (its chunks and embeddings in `shards`
    steps each), and the summaries over all lanes; each asset's code version names the settings of
    `resources` (default: the defaults') its output depends on; the automation sensor retries a
    failed asset after `retry_after` seconds."""
    strategies = list(strategies)
    resources = resources if resources is not None else build_resources(DEFAULTS)
    lanes = []
    for s in strategies:
        lanes += [
            *chunks.chunk_assets(s, shards),
            *embeddings.embedding_assets(s, resources, shards),
            retrieval.retrieval_asset(s, resources),
            evaluation.evaluation_asset(s),
            serving.index_asset(s, resources),
        ]
    baseline = evaluation.baseline_for(strategies)
    evaluated = [spec.name for spec in plan(list(resources["retrieval"].retrievers))[0]]
    served = release.release_run(resources["release"].run, baseline, evaluated)
    chosen = resources["release"].chosen
    kept = tuple(chosen.split("/", 1)) if chosen else None
    return [
        *conditions.with_conditions(
            [
                sources.notes_head,
                sources.questions_file,
                sources.source_notes_asset(resources),
                *sources.cleaned_assets(shards),
                questions.questions_asset(resources),
                *lanes,
                evaluation.summary_asset(strategies, resources, kept),
                serving.serving_evaluation_asset(strategies, resources),
                costs.costs_asset(strategies, resources),
                costs.budgets_asset(resources),
                answers.answers_asset(strategies, baseline, served, resources),
                judgments.judgments_asset(strategies, served, resources),
                release.release_asset(strategies, served, resources),
            ],
            retry_after,
        ),
        release.live_release,
    ]


def asset_job(tags: Mapping[str, str] | None = None, apart: dg.AssetChecksDefinition | None = None):
    """The job; `apart` (the `outputs_intact` checks) runs on its own, not after every build: a run
    under overridden settings is not failed for them."""
    selection = dg.AssetSelection.all(include_sources=True)  # observes notes_head and questions_file first
    return dg.define_asset_job(
        JOB,
        selection=selection - dg.AssetSelection.checks(apart) if apart is not None else selection,
        tags=tags,
        description="The whole pipeline; unchanged notes, chunks and vectors are reused inside each asset, "
        "and a step whose inputs are unchanged returns at once.",
    )


index_and_evaluate = asset_job()


def check_runs(settings: Settings, strategies: list[Strategy]) -> None:
    """Every `RAG_ANSWER_RUNS` run, the `RAG_RELEASE_RUN` and the `RAG_CHOSEN_RUN` is one the pipeline
    evaluates: checked when the code location loads, not at the step that reads it."""
    names = {s.name for s in strategies}
    retrievers = {spec.name for spec in plan(list(settings.retrievers))[0]}  # the named and their inputs
    named = [("RAG_ANSWER_RUNS", run) for run in filter(None, settings.answer_runs.split(","))]
    for variable, run in [
        *named,
        *([("RAG_RELEASE_RUN", settings.release_run)] if settings.release_run else []),
        *([("RAG_CHOSEN_RUN", settings.chosen_run)] if settings.chosen_run else []),
    ]:
        strategy, retriever = run.split("/", 1)
        if strategy not in names or retriever not in retrievers:
            raise SettingsError(
                f"{variable}: {run} is not an evaluated run; strategies: {', '.join(sorted(names))}; "
                f"retrievers: {', '.join(sorted(retrievers))}"
            )


def check_labels(settings: Settings) -> None:
    """A `RAG_JUDGE_LABELS` file that is missing or malformed stops the code location as a bad setting
    does (`judgments` reads it again when it runs: the file may change meanwhile)."""
    if not settings.judge_labels:
        return
    path = Path(shown_path(settings.judge_labels))  # named from where the user stands
    if not path.exists():
        raise SettingsError(
            f"RAG_JUDGE_LABELS={path}: no such file (`python -m rag_pipeline.judge label` writes one)"
        )
    try:
        read_labels(path)
    except LabelsError as exc:
        raise SettingsError(f"RAG_JUDGE_LABELS: {exc}") from None


def graph_size(assets: Iterable) -> int:
    """The assets and checks of `assets` as the automation sensor counts them: each asset, its own
    checks and, for a materialized one, its `outputs_intact`."""
    return sum(
        len(a.keys) * (1 if a.is_observable else 2) + len(list(a.check_specs))
        if isinstance(a, dg.AssetsDefinition)
        else 1
        for a in assets
    )


def check_size(assets: list, strategies: list[Strategy], shards: int) -> None:
    """More shards than one run's automation can plan stop the code location (the sensor would fail
    at each tick, `make run` only after minutes), naming the most shards these strategies allow."""
    size = graph_size(assets)
    if size <= MAX_ENTITIES:
        return
    # what one shard more adds: its cleaned notes, and its chunks and embeddings of each strategy
    first = {shard_key(stage, s, 0) for s in strategies for stage in ("chunks", "embeddings")}
    first.add(cleaned_shard_key(0))
    per_shard = graph_size(
        a for a in assets if isinstance(a, dg.AssetsDefinition) and {k.path[-1] for k in a.keys} & first
    )
    most = max(1, shards - -(-(size - MAX_ENTITIES) // max(per_shard, 1)))
    raise SettingsError(
        f"RAG_SHARDS={shards}: {len(strategies)} strategies in {shards} shards make {size:,} assets and "
        f"checks, more than the {MAX_ENTITIES} one Dagster run's automation plans; set RAG_SHARDS to "
        f"{most} or fewer"
    )


def build_definitions(settings: Settings, strategies: list[Strategy] | None = None) -> dg.Definitions:
    """The Definitions `settings` describe (`strategies`: those instead of the settings' own)."""
    resources = build_resources(settings)
    if strategies is None:
        strategies = load_strategies(settings.strategies or None, settings.strategy_file or None)
    check_runs(settings, strategies)
    try:
        resources["retrieval"].settings()
    except ValueError as exc:  # RAG_CANDIDATE_K and RAG_CONTEXT_K are checked together
        raise SettingsError(
            f"RAG_CANDIDATE_K={settings.candidate_k}, RAG_CONTEXT_K={settings.context_k}: {exc}"
        ) from None
    check_labels(settings)
    try:  # read again when the costs are priced: the file may change meanwhile
        resources["release"].read_prices()
    except PricesError as exc:
        raise SettingsError(f"RAG_PRICES: {exc}") from None
    assets = build_assets(strategies, resources, settings.retry_after, settings.shards)
    check_size(assets, strategies, settings.shards)
    tags = {
        DATA_DIR_TAG: data_dir_name(settings.data_dir),
        **settings_tags(settings),
        GRAPH_TAG: graph_tag(assets),
    }
    outputs = automation.outputs_check(assets, settings.reindex_cron, settings.reindex_timezone)
    return dg.Definitions(
        assets=assets,
        asset_checks=[outputs],
        # RAG_RUN_TAGS: e.g. a tuning session's trials are `rag/tune=<id>`
        jobs=[asset_job(tags | dict(settings.run_tags), outputs)],
        sensors=[automation.automation_sensor(settings.reindex, tags)],
        resources=resources,
        executor=leased(identified(executor_for(settings), resources["embedder"]), tags[DATA_DIR_TAG]),
    )


def reconstructable_job() -> dg.JobDefinition:
    """The job as the environment describes it now: `dg.reconstructable(reconstructable_job)` rebuilds
    it so in every step's process, which is what the multiprocess and k8s executors need."""
    return build_definitions(Settings.from_env(os.environ)).resolve_job_def(JOB)


settings = Settings.from_env(os.environ)  # a bad RAG_* value fails here, when the code location loads
defs = build_definitions(settings)
assets = list(defs.assets)
