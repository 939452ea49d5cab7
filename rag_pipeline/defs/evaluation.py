"""Evaluation stage: per-question outcomes per strategy, then every configuration side by side."""

from collections.abc import Mapping

import dagster as dg
import pandas as pd

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.ledger import experiment_entries
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import (
    content_version,
    publish_directory,
    read_table,
)
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.evaluation import (
    BASELINE_RUN,
    REPORT_KS,
    Report,
    Reported,
    glance_tables,
    headline_md,
    headline_numbers,
    plain,
    published_report,
    records,
    same_chunks,
    shown_matrix,
    strategy_outcomes,
    summarize,
)
from rag_pipeline.lib.questions import stale_suggestions, usable
from rag_pipeline.lib.sources import CLEANER_VERSION

RUN_KEYS = ["strategy", "retriever", "embedding_version"]


@logic
def identical_strategies(store: DataStore, strategies: list[Strategy], keep: str) -> dict[str, str]:
    """{strategy: another with exactly the same chunks}, from the lanes' chunk files."""
    spans = {
        s.name: store.read(lanes.lane_path("chunks", s), columns=["note", "start", "end"]) for s in strategies
    }
    return same_chunks(spans, keep)


def evaluation_asset(strategy: Strategy) -> dg.AssetsDefinition:
    relative = lanes.lane_path("evaluation", strategy)

    @stage_asset(
        lanes.lane_key("evaluation", strategy),
        group="evaluation",
        deps=[lanes.lane_key("retrieval", strategy), "questions"],
        strategy=strategy,
        description=f"Per-question note and evidence ranks and characters passed for `{strategy.name}`, "
        "per retriever configuration.",
    )
    def _evaluation(context: dg.AssetExecutionContext, store: DataStore) -> dg.MaterializeResult:
        questions = usable(store.read(lanes.QUESTIONS))
        frame = strategy_outcomes(
            questions, store.read(lanes.lane_path("retrieval", strategy)), strategy.name
        )
        metadata = {}
        for retriever, outcomes in frame.groupby("retriever", sort=False):
            at = summarize(outcomes, REPORT_KS).set_index("k")
            metadata |= {
                f"{retriever} evidence_recall@{k}": round(float(at.at[k, "evidence_recall"]), 4)
                for k in (1, 5)
            }
        path = store.write(frame, relative)
        return materialized(content_version(frame, list(frame.columns)), metadata, files=[path])

    return _evaluation


def stale_entry(drift: pd.DataFrame) -> dict[str, object]:
    """The questions whose gold labels went stale, with their suggestions (none: no entry)."""
    lines = stale_suggestions(drift)
    return {"stale_gold": dg.MetadataValue.md("\n\n".join(lines))} if lines else {}


@logic
def read_evaluated(store: DataStore, strategies: list[Strategy], keep: str) -> dict[str, object]:
    """What the summary is computed from (`published_report`)."""
    return {
        "questions": store.read(lanes.QUESTIONS),
        "commit": str(store.read(lanes.SOURCE_NOTES, columns=["commit"])["commit"].iloc[0]),
        "same": identical_strategies(store, strategies, keep),
        "outcomes": pd.concat(
            [store.read(lanes.lane_path("evaluation", s)) for s in strategies], ignore_index=True
        ),
        "drift": store.read(lanes.GOLD_DRIFT),
        "priced": read_table(store.path(lanes.PRICED_COSTS)),
    }


@logic
def code_versions(context: dg.AssetExecutionContext, strategies: list[Strategy]) -> dict[str, object]:
    """The code the report was computed by: the cleaner's, the chunkers', each lane's evaluation as
    last materialized, and this summary's."""
    lanes_made = context.instance.get_latest_materialization_code_versions(
        [dg.AssetKey(lanes.lane_key("evaluation", s)) for s in strategies]
    )
    return {
        "cleaner": CLEANER_VERSION,
        "chunkers": {s.name: s.version for s in strategies},
        "evaluation": {key.to_user_string(): version for key, version in lanes_made.items()},
        "summary": context.assets_def.code_versions_by_key[context.asset_key],
    }


def baseline_for(strategies: list[Strategy]) -> tuple[str, str]:
    """`fixed-1000` dense; when RAG_STRATEGIES leaves it out, the first strategy's dense run."""
    names = [s.name for s in strategies]
    return BASELINE_RUN if BASELINE_RUN[0] in names else (names[0], BASELINE_RUN[1])


def frame_table(frame: pd.DataFrame) -> dg.TableMetadataValue:
    """A small frame as a table the asset page shows inline, with no dialog to open."""
    rows = records(frame)
    kinds = {c: "float" if pd.api.types.is_float_dtype(frame[c]) else "string" for c in frame.columns}
    return dg.MetadataValue.table(
        records=[dg.TableRecord(row) for row in rows],
        schema=dg.TableSchema(columns=[dg.TableColumn(str(c), kinds[c]) for c in frame.columns]),
    )


def summary_metadata(
    report: Report,
    same: dict[str, str],
    baseline: tuple[str, str],
    counts: dict[str, object],
    experiment: dict[str, object],
) -> dict[str, object]:
    """The summary page, in the order a person reads it: the verdict as plain text, the top
    configurations and the per-category table inline, the numbers plotted across
    materializations and `counts`, then the long tables behind their dialogs. Nothing here is a long
    unbreakable string (a path, a full sha), which would widen the page's value column past a
    laptop's screen. A new entry is one line here."""
    judged = report.verdict
    chosen = judged["best"][0] if judged["best"] else None
    readable = (
        shown_matrix(report.matrix, chosen, judged["baseline"]) if len(report.matrix) else report.matrix
    )
    tables = glance_tables(readable, report.category, judged["baseline"], chosen) if len(readable) else {}
    return {
        "verdict": f"{plain(judged['wording'])} ({experiment['looks']}.)",
        **{name: frame_table(frame) for name, frame in tables.items()},
        "vs previous experiment": experiment["vs previous experiment"],
        "summary": dg.MetadataValue.md(
            headline_md(judged, report.matrix, same) if len(report.matrix) else report.matrix_md
        ),
        "best": ", ".join(judged["best"]),
        "delta": judged["delta"] if judged["delta"] is not None else float("nan"),
        "p_value": judged["p_value"] if judged["p_value"] is not None else float("nan"),
        "significant": judged["significant"],
        **headline_numbers(report.matrix, baseline),
        **counts,
        "configurations": dg.MetadataValue.md(report.matrix_md),
        "categories": dg.MetadataValue.md(report.category_md),
        "plots": dg.MetadataValue.md(report.plots_md),
        "reference_table": dg.MetadataValue.md(report.reference_md),
        "first_evidence_ranks": dg.MetadataValue.md(report.ranks_md),
        "experiments": experiment["experiments"],
    }


def summary_asset(
    strategies: list[Strategy], resources: Mapping[str, object], kept: tuple[str, str] | None = None
) -> dg.AssetsDefinition:
    """`kept`: the run the verdict keeps as its choice (RAG_CHOSEN_RUN), None: chosen on dev."""
    baseline = baseline_for(strategies)

    @stage_asset(
        "evaluation_summary",
        group="evaluation",
        # the retrieval settings the report names (candidate_k, the context budget), the strategies
        # compared, the baseline and the run kept as chosen, and the test share the experiment's id
        # names (a share that moves no question's split changes no parent's data version)
        config=lambda retrieval, questions_file: config_digest(
            retrieval.version(),
            [(s.name, s.version) for s in strategies],
            baseline,
            kept,
            questions_file.test_share,
        ),
        resources=resources,
        kinds=("parquet", "markdown"),
        deps=[
            "source_notes",
            "questions",
            "budgets",  # each configuration's costs, priced, and the budgets the verdict chooses within
            *(lanes.lane_key(stage, s) for s in strategies for stage in ("chunks", "evaluation")),
        ],
        description="Every strategy x retriever configuration side by side: recall, MRR, nDCG, candidate "
        "recall, recall at equal character budgets, per category, paired comparison with the baseline, "
        "latency and cost against the budgets; tables and plots in the UI and under `reports/`.",
    )
    def evaluation_summary(
        context: dg.AssetExecutionContext,
        store: DataStore,
        retrieval: RetrievalResource,
        notes_repo: NotesRepository,
        questions_file: QuestionsFile,
    ):
        evaluated = read_evaluated(store, strategies, baseline[0])
        source = (notes_repo.location(), questions_file.path, code_versions(context, strategies))
        reported = Reported(RUN_KEYS, retrieval.settings(), baseline, kept)
        done = published_report(evaluated, reported, source, store.path("drawn", "plots.arrow"))
        report, reports = done.report, store.path(lanes.REPORTS)
        publish_directory(reports, done.files)  # a user's files and the other reports stay
        context.log.info(f"verdict: {report.verdict['wording']}")
        confirmed = report.verdict["test_delta"] is not None
        outcomes, questions = evaluated["outcomes"], evaluated["questions"]
        experiment = experiment_entries(
            context.log, store, outcomes, questions, done.provenance, retrieval, questions_file, confirmed
        )
        counts = {"commit": evaluated["commit"][:12], "n_invalid": len(done.invalid), **done.gold}
        counts |= stale_entry(evaluated["drift"])
        return materialized(
            config_digest(*done.version_parts()),
            summary_metadata(report, evaluated["same"], baseline, counts, experiment),
            files=[reports / name for name in done.files],
            kept={"report": str(reports / "report.md"), "computed_from": done.provenance},
        )

    return evaluation_summary
