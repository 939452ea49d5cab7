"""Evaluation stage: per-question outcomes per strategy, then every configuration side by side."""

import json
from collections.abc import Mapping

import dagster as dg
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs.platform import lanes
from rag_pipeline.defs.platform.assets import stage_asset
from rag_pipeline.defs.platform.ledger import experiment_entries
from rag_pipeline.defs.platform.lineage import config_digest, materialized
from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import (
    AnyPath,
    content_version,
    publish_directory,
    read_arrow,
    read_table,
    table_bytes,
    write_arrow,
)
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.evaluation import (
    BASELINE_RUN,
    REPORT_KS,
    Report,
    Reported,
    build_report,
    glance_tables,
    headline_md,
    headline_numbers,
    plain,
    records,
    report_provenance,
    reported_costs,
    same_chunks,
    shown_matrix,
    strategy_outcomes,
    summarize,
)
from rag_pipeline.lib.questions import DRIFT_SCHEMA, stale_suggestions, usable
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


PNGS = pa.list_(pa.binary())


@logic
def load_drawn(path: AnyPath) -> dict[str, tuple[bytes, ...]]:
    """The last report's plots by what they draw (see `build_report`); none when unreadable."""
    try:
        table = read_arrow(path) if path.exists() else None
    except (OSError, pa.ArrowException):
        table = None
    if table is None or table.column_names != ["key", "pngs"]:
        return {}
    return {k: tuple(p) for k, p in zip(table["key"].to_pylist(), table["pngs"].to_pylist())}


def stale_entry(drift: pd.DataFrame) -> dict[str, object]:
    """The questions whose gold labels went stale, with their suggestions (none: no entry)."""
    lines = stale_suggestions(drift)
    return {"stale_gold": dg.MetadataValue.md("\n\n".join(lines))} if lines else {}


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
        questions = store.read(lanes.QUESTIONS)
        commit = str(store.read(lanes.SOURCE_NOTES, columns=["commit"])["commit"].iloc[0])
        same = identical_strategies(store, strategies, baseline[0])
        outcomes = pd.concat(
            [store.read(lanes.lane_path("evaluation", s)) for s in strategies], ignore_index=True
        )
        lanes_made = context.instance.get_latest_materialization_code_versions(
            [dg.AssetKey(lanes.lane_key("evaluation", s)) for s in strategies]
        )
        code_versions = {
            "cleaner": CLEANER_VERSION,
            "chunkers": {s.name: s.version for s in strategies},
            "evaluation": {key.to_user_string(): version for key, version in lanes_made.items()},
            "summary": context.assets_def.code_versions_by_key[context.asset_key],
        }
        provenance = report_provenance(
            outcomes, questions, notes_repo.location(), commit, questions_file.path, code_versions
        )
        invalid = dict(zip(questions["question_id"], questions["invalid"])) if "invalid" in questions else {}
        invalid = {q: why for q, why in invalid.items() if isinstance(why, str)}
        statuses = questions["gold_status"].value_counts()
        gold = {f"n_{status}_gold": int(statuses.get(status, 0)) for status in ("stale", "carried")}
        drift = store.read(lanes.GOLD_DRIFT)
        drawn_path = store.path("drawn", "plots.arrow")
        known = load_drawn(drawn_path)
        reported = Reported(RUN_KEYS, retrieval.settings(), baseline, kept)
        priced = read_table(store.path(lanes.PRICED_COSTS))
        costs = reported_costs(priced.to_pandas(), json.loads(priced.schema.metadata[b"rag.budgets"]))
        report = build_report(outcomes, reported, provenance, invalid, same, gold, known, costs)
        if report.drawn.keys() != known.keys():
            write_arrow(
                pa.table({"key": list(report.drawn), "pngs": pa.array(list(report.drawn.values()), PNGS)}),
                drawn_path,
            )
        reports = store.path(lanes.REPORTS)
        meta = {f"rag.{k}": v for k, v in provenance.items()}
        files = {
            f"{name}.parquet": table_bytes(
                pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(meta)
            )
            for name, frame in report.tables.items()
        }
        files |= {f"{name}.png": png for name, png in report.plots.items()}
        files["gold_drift.parquet"] = table_bytes(
            pa.Table.from_pandas(drift, schema=DRIFT_SCHEMA, preserve_index=False).replace_schema_metadata(
                meta
            )
        )
        figures = pa.Table.from_pandas(costs.reported(), preserve_index=False)
        files[lanes.COSTS_REPORT] = table_bytes(figures.replace_schema_metadata(meta | costs.metadata()))
        files["report.md"] = report.markdown.encode()
        files[lanes.VERDICT] = json.dumps(
            report.verdict | {"commit": commit}, indent=1, ensure_ascii=False
        ).encode()
        publish_directory(reports, files)  # a user's files and the other reports stay
        context.log.info(f"verdict: {report.verdict['wording']}")
        summary = report.tables["evaluation_summary"]
        return materialized(
            # what the reports say they were computed from too: the files below it copy that; and the
            # verdict's choice, which answers reads and the budgets move without this table moving
            config_digest(
                content_version(summary, list(summary.columns)), provenance, report.verdict["best"]
            ),
            summary_metadata(
                report,
                same,
                baseline,
                {"commit": commit[:12], "n_invalid": len(invalid), **gold, **stale_entry(drift)},
                experiment_entries(
                    context.log,
                    store,
                    outcomes,
                    questions,
                    provenance,
                    retrieval,
                    questions_file,
                    report.verdict["test_delta"] is not None,
                ),
            ),
            files=[reports / name for name in files],
            kept={"report": str(reports / "report.md"), "computed_from": provenance},
        )

    return evaluation_summary
