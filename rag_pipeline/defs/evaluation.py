"""Evaluation stage: per-question outcomes per strategy, then every configuration side by side."""

import json
from collections.abc import Mapping

import dagster as dg
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs import lanes
from rag_pipeline.defs.lineage import code_version, config_digest, materialized, reuse
from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core import content_version, publish_directory, table_bytes
from rag_pipeline.lib.evaluation import REPORT_KS, build_report, headline_md, question_outcomes, summarize
from rag_pipeline.lib.questions import questions_from_frame, usable
from rag_pipeline.lib.sources import CLEANER_VERSION

RUN_KEYS = ["strategy", "retriever", "embedding_version"]
BASELINE = ("fixed-1000", "dense")
EVALUATION_VERSION = "evaluation-v4"
SUMMARY_VERSION = "summary-v3"


def strategy_outcomes(questions: pd.DataFrame, retrieval: pd.DataFrame, strategy: str) -> pd.DataFrame:
    """Per question and retriever configuration of one strategy: ranks, characters passed, provenance."""
    items, spans = questions_from_frame(questions)
    frames = []
    for (retriever, version), run in retrieval.groupby(["retriever", "embedding_version"], sort=False):
        outcomes = question_outcomes(items, spans, run)
        outcomes.insert(0, "strategy", strategy)
        outcomes.insert(1, "retriever", retriever)
        outcomes.insert(2, "embedding_version", version)
        first = run.iloc[0]
        outcomes = outcomes.assign(
            analyzer=first["analyzer"],
            n_chunks=int(first["n_chunks"]),
            questions_sha256=first["questions_sha256"],
        )
        frames.append(outcomes)
    if not frames:
        raise ValueError(f"retrieval_{strategy.replace('-', '_')} holds no row: no question to evaluate")
    return pd.concat(frames, ignore_index=True)


def identical_strategies(store: DataStore, strategies: list[Strategy], keep: str) -> dict[str, str]:
    """{strategy: another with exactly the same chunk spans}: reported once, not twice; `keep` (the
    baseline's strategy) is the one kept."""
    seen: dict[str, str] = {}
    duplicates = {}
    for s in sorted(strategies, key=lambda s: s.name != keep):
        spans = store.read(lanes.lane_path("chunks", s), columns=["note", "start", "end"])
        key = content_version(spans.sort_values(["note", "start", "end"]), ["note", "start", "end"])
        if key in seen:
            duplicates[s.name] = seen[key]
        seen.setdefault(key, s.name)
    return duplicates


def headline_numbers(matrix: pd.DataFrame, baseline: tuple[str, str]) -> dict[str, object]:
    """Numbers the asset page plots across materializations: a regression shows at a glance."""
    if matrix.empty:
        return {}
    rows = {"best": matrix.iloc[0]}
    base = matrix[(matrix["strategy"] == baseline[0]) & (matrix["retriever"] == baseline[1])]
    if not base.empty:
        rows["baseline"] = base.iloc[0]
    out: dict[str, object] = {"best_configuration": str(matrix.iloc[0]["configuration"])}
    for who, row in rows.items():
        for column, name in (
            ("evid@1", "recall@1"),
            ("evid@5", "recall@5"),
            ("r@4k", "recall@4000chars"),
            ("mrr@10", "mrr@10"),
        ):
            out[f"{who} {name}"] = round(float(row[column]), 4)
    return out


def report_provenance(
    outcomes: pd.DataFrame,
    questions: pd.DataFrame,
    repository: str,
    commit: str,
    questions_path: str,
    strategies: list[Strategy],
) -> dict[str, str]:
    """What the reports are computed from: the notes commit indexed and the questions file; lanes
    computed from different question sets are refused rather than mixed into one table."""
    seen = outcomes.groupby("questions_sha256")["strategy"].unique()
    if len(seen) > 1:
        detail = "; ".join(f"{v[:12]}: {', '.join(s)}" for v, s in seen.items())
        raise ValueError(
            f"the evaluations were computed from different questions files ({detail}); "
            "materialize the stale lanes first"
        )
    if outcomes["questions_sha256"].iloc[0] != questions["questions_sha256"].iloc[0]:
        raise ValueError("the evaluations are older than the questions: materialize retrieval and evaluation")
    return {
        "repository": repository,
        "commit": commit,
        "questions_file": questions_path,
        "questions_sha256": str(outcomes["questions_sha256"].iloc[0]),
        "embedding_version": ", ".join(outcomes["embedding_version"].unique()),
        "code_versions": json.dumps(
            {
                "cleaner": CLEANER_VERSION,
                "chunkers": {s.name: s.version for s in strategies},
                "analyzer": str(outcomes["analyzer"].iloc[0]),
                "evaluation": EVALUATION_VERSION,
                "summary": SUMMARY_VERSION,
            }
        ),
    }


def evaluation_asset(strategy: Strategy) -> dg.AssetsDefinition:
    relative = lanes.lane_path("evaluation", strategy)

    @dg.asset(
        name=lanes.lane_key("evaluation", strategy),
        group_name="evaluation",
        code_version=EVALUATION_VERSION,
        kinds={"parquet"},
        deps=[lanes.lane_key("retrieval", strategy), "questions"],
        metadata={"strategy": strategy.name},
        description=f"Per-question note and evidence ranks and characters passed for `{strategy.name}`, "
        "per retriever configuration.",
    )
    def _evaluation(context: dg.AssetExecutionContext, store: DataStore) -> dg.MaterializeResult:
        if (kept := reuse(context)) is not None:
            return kept
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


def baseline_for(strategies: list[Strategy]) -> tuple[str, str]:
    """`fixed-1000` dense; when RAG_STRATEGIES leaves it out, the first strategy's dense run."""
    names = [s.name for s in strategies]
    return BASELINE if BASELINE[0] in names else (names[0], BASELINE[1])


def summary_config(retrieval: RetrievalResource, strategies: list[Strategy]) -> str:
    """The retrieval settings the report names (candidate_k, the context budget), the strategies
    compared and the baseline."""
    return config_digest(
        retrieval.version(), [(s.name, s.version) for s in strategies], baseline_for(strategies)
    )


def summary_asset(strategies: list[Strategy], resources: Mapping[str, object]) -> dg.AssetsDefinition:
    baseline = baseline_for(strategies)

    @dg.asset(
        name="evaluation_summary",
        group_name="evaluation",
        code_version=code_version(SUMMARY_VERSION, summary_config(resources["retrieval"], strategies)),
        kinds={"parquet", "markdown"},
        deps=[
            "source_notes",
            "questions",
            *(lanes.lane_key(stage, s) for s in strategies for stage in ("chunks", "evaluation")),
        ],
        description="Every strategy x retriever configuration side by side: recall, MRR, nDCG, candidate "
        "recall, recall at equal character budgets, per category, paired comparison with the baseline; "
        "tables and plots in the UI and under `reports/`.",
    )
    def evaluation_summary(
        context: dg.AssetExecutionContext,
        store: DataStore,
        retrieval: RetrievalResource,
        notes_repo: NotesRepository,
        questions_file: QuestionsFile,
    ):
        config = summary_config(retrieval, strategies)
        if (kept := reuse(context, config)) is not None:
            return kept
        questions = store.read(lanes.QUESTIONS)
        commit = str(store.read(lanes.SOURCE_NOTES, columns=["commit"])["commit"].iloc[0])
        duplicates = identical_strategies(store, strategies, baseline[0])
        outcomes = pd.concat(
            [store.read(lanes.lane_path("evaluation", s)) for s in strategies if s.name not in duplicates],
            ignore_index=True,
        )
        provenance = report_provenance(
            outcomes, questions, notes_repo.location(), commit, questions_file.path, strategies
        )
        invalid = dict(zip(questions["question_id"], questions["invalid"])) if "invalid" in questions else {}
        invalid = {q: why for q, why in invalid.items() if isinstance(why, str)}
        report = build_report(outcomes, RUN_KEYS, retrieval.settings(), baseline, provenance, invalid)
        reports = store.path(lanes.REPORTS)
        meta = {f"rag.{k}": v for k, v in provenance.items()}
        files = {
            f"{name}.parquet": table_bytes(
                pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(meta)
            )
            for name, frame in report.tables.items()
        }
        files |= {f"{name}.png": png for name, png in report.plots.items()}
        files["report.md"] = report.markdown.encode()
        publish_directory(reports, files, keep=(lanes.ANSWER_SUMMARY, lanes.SERVING_REPORT))
        context.log.info(f"evaluation summary:\n{report.matrix_md}")
        summary = report.tables["evaluation_summary"]
        return materialized(
            content_version(summary, list(summary.columns)),
            {
                "summary": dg.MetadataValue.md(
                    headline_md(report.matrix, baseline, duplicates)
                    if len(report.matrix)
                    else report.matrix_md
                ),
                **headline_numbers(report.matrix, baseline),
                "configurations": dg.MetadataValue.md(report.matrix_md),
                "plots": dg.MetadataValue.md(report.plots_md),
                "reference_table": dg.MetadataValue.md(report.reference_md),
                "per_category": dg.MetadataValue.md(report.category_md),
                "first_evidence_ranks": dg.MetadataValue.md(report.ranks_md),
                "report": dg.MetadataValue.path(str(reports / "report.md")),
                "commit": provenance["commit"],
                "n_invalid": len(invalid),
            },
            config=config,
            files=[reports / name for name in files],
        )

    return evaluation_summary
