"""Evaluation stage: per-question outcomes per strategy, then every configuration side by side."""

import json

import dagster as dg
import pandas as pd
import pyarrow as pa

from rag_pipeline.defs.io import data_version, versioned
from rag_pipeline.defs.resources import DataStore, NotesRepository, QuestionsFile, RetrievalResource
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.cleaning import CLEANER_VERSION
from rag_pipeline.lib.incremental import content_version
from rag_pipeline.lib.metrics import REPORT_KS, question_outcomes, summarize
from rag_pipeline.lib.questions import questions_from_frame, usable
from rag_pipeline.lib.report import build_report, headline_md
from rag_pipeline.lib.storage import publish_directory, read_frame, table_bytes

RUN_KEYS = ["strategy", "retriever", "embedding_version"]
BASELINE = ("fixed-1000", "dense")
EVALUATION_VERSION = "evaluation-v3"
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
            commit=first["commit"],
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
        path = store.path("chunks", f"{s.name}.parquet")
        spans = read_frame(path, columns=["note", "start", "end"]) if path.exists() else None
        key = (
            ""
            if spans is None
            else content_version(spans.sort_values(["note", "start", "end"]), ["note", "start", "end"])
        )
        if key and key in seen:
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
    questions_path: str,
    strategies: list[Strategy],
) -> dict[str, str]:
    """What the reports are computed from; lanes computed from different commits or question sets
    are refused rather than mixed into one table."""
    for column, upstream in (("commit", "notes commits"), ("questions_sha256", "questions files")):
        seen = outcomes.groupby(column)["strategy"].unique()
        if len(seen) > 1:
            detail = "; ".join(f"{v[:12]}: {', '.join(s)}" for v, s in seen.items())
            raise ValueError(
                f"the evaluations were computed from different {upstream} ({detail}); "
                "materialize the stale lanes first"
            )
    if outcomes["questions_sha256"].iloc[0] != questions["questions_sha256"].iloc[0]:
        raise ValueError("the evaluations are older than the questions: materialize retrieval and evaluation")
    return {
        "repository": repository,
        "commit": str(outcomes["commit"].iloc[0]),
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
    @dg.asset(
        name=f"evaluation_{strategy.key}",
        group_name="evaluation",
        code_version=EVALUATION_VERSION,
        kinds={"parquet"},
        ins={"retrieval": dg.AssetIn(f"retrieval_{strategy.key}")},
        metadata={"storage_path": f"evaluation/{strategy.name}.parquet", "strategy": strategy.name},
        description=f"Per-question note and evidence ranks and characters passed for `{strategy.name}`, "
        "per retriever configuration.",
    )
    def _evaluation(questions: pd.DataFrame, retrieval: pd.DataFrame) -> dg.Output:
        frame = strategy_outcomes(usable(questions), retrieval, strategy.name)
        metadata = {}
        for retriever, outcomes in frame.groupby("retriever", sort=False):
            at = summarize(outcomes, REPORT_KS).set_index("k")
            metadata |= {
                f"{retriever} evidence_recall@{k}": round(float(at.at[k, "evidence_recall"]), 4)
                for k in (1, 5)
            }
        return versioned(frame, **metadata)

    return _evaluation


def baseline_for(strategies: list[Strategy]) -> tuple[str, str]:
    """`fixed-1000` dense; when RAG_STRATEGIES leaves it out, the first strategy's dense run."""
    names = [s.name for s in strategies]
    return BASELINE if BASELINE[0] in names else (names[0], BASELINE[1])


def summary_asset(strategies: list[Strategy]) -> dg.AssetsDefinition:
    baseline = baseline_for(strategies)

    @dg.asset(
        name="evaluation_summary",
        group_name="evaluation",
        code_version=SUMMARY_VERSION,
        kinds={"parquet", "markdown"},
        ins={"questions": dg.AssetIn(), **{f"evaluation_{s.key}": dg.AssetIn() for s in strategies}},
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
        questions: pd.DataFrame,
        **evaluations: pd.DataFrame,
    ):
        duplicates = identical_strategies(store, strategies, baseline[0])
        outcomes = pd.concat(
            [evaluations[f"evaluation_{s.key}"] for s in strategies if s.name not in duplicates],
            ignore_index=True,
        )
        provenance = report_provenance(
            outcomes, questions, notes_repo.location(), questions_file.path, strategies
        )
        invalid = dict(zip(questions["question_id"], questions["invalid"])) if "invalid" in questions else {}
        invalid = {q: why for q, why in invalid.items() if isinstance(why, str)}
        report = build_report(outcomes, RUN_KEYS, retrieval.settings(), baseline, provenance, invalid)
        reports = store.path("reports")
        meta = {f"rag.{k}": v for k, v in provenance.items()}
        files = {
            f"{name}.parquet": table_bytes(
                pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(meta)
            )
            for name, frame in report.tables.items()
        }
        files |= {f"{name}.png": png for name, png in report.plots.items()}
        files["report.md"] = report.markdown.encode()
        publish_directory(reports, files, keep=("answer_summary.parquet", "serving.parquet"))
        context.log.info(f"evaluation summary:\n{report.matrix_md}")
        summary = report.tables["evaluation_summary"]
        return dg.MaterializeResult(
            data_version=data_version(summary),
            metadata={
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
        )

    return evaluation_summary
