"""What `evaluation_summary` publishes under `reports/`: the report built from every lane's outcomes,
its tables, plots and pages as files, each table carrying what the report was computed from; and the
plots kept by what they draw, so that an unchanged plot is not drawn again."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa

from rag_pipeline.lib.core import AnyPath, content_version, read_arrow, table_bytes, write_arrow
from rag_pipeline.lib.evaluation.budgets import reported_costs
from rag_pipeline.lib.evaluation.report import Report
from rag_pipeline.lib.evaluation.runs import report_provenance
from rag_pipeline.lib.evaluation.sets import build_report
from rag_pipeline.lib.evaluation.tables import Reported
from rag_pipeline.lib.questions import DRIFT_SCHEMA

PNGS = pa.list_(pa.binary())
COSTS_REPORT = "costs.parquet"  # the measured costs as priced and held against the budgets
VERDICT = "verdict.json"


def load_drawn(path: AnyPath) -> dict[str, tuple[bytes, ...]]:
    """The last report's plots by what they draw (see `build_report`); none when unreadable."""
    try:
        table = read_arrow(path) if path.exists() else None
    except (OSError, pa.ArrowException):
        table = None
    if table is None or table.column_names != ["key", "pngs"]:
        return {}
    return {k: tuple(p) for k, p in zip(table["key"].to_pylist(), table["pngs"].to_pylist())}


@dataclass
class Published:
    report: Report
    provenance: dict[str, str]  # what the report was computed from (report_provenance)
    files: dict[str, bytes]  # by name under reports/
    invalid: dict[str, str]  # question_id -> why it is invalid
    gold: dict[str, int]  # n_stale_gold, n_carried_gold

    def version_parts(self) -> tuple[object, ...]:
        """What the summary's data version is of: its table, what the reports say they were computed
        from (the files copy that), and the verdict's choice, which answers reads and the budgets
        move without the table moving."""
        summary = self.report.tables["evaluation_summary"]
        return content_version(summary, list(summary.columns)), self.provenance, self.report.verdict["best"]


def published_report(
    evaluated: dict[str, object],
    reported: Reported,
    source: tuple[str, str, dict[str, object]],
    drawn_path: AnyPath,
) -> Published:
    """The report of every lane's `outcomes` on the `questions` (frames of `evaluated`, with the gold
    `drift`, the `priced` costs held against the budgets their metadata names, the notes' `commit`
    and the strategies with the `same` chunks), and its files. `source`: the notes repository, the
    questions file and the code versions the provenance names. The plots drawn are kept at
    `drawn_path` (read first: a plot that draws the same is not drawn again)."""
    outcomes, questions, drift, commit = (evaluated[k] for k in ("outcomes", "questions", "drift", "commit"))
    repository, questions_path, code_versions = source
    provenance = report_provenance(outcomes, questions, repository, commit, questions_path, code_versions)
    invalid = dict(zip(questions["question_id"], questions["invalid"])) if "invalid" in questions else {}
    invalid = {q: why for q, why in invalid.items() if isinstance(why, str)}
    statuses = questions["gold_status"].value_counts()
    gold = {f"n_{status}_gold": int(statuses.get(status, 0)) for status in ("stale", "carried")}
    known = load_drawn(drawn_path)
    priced = evaluated["priced"]
    costs = reported_costs(priced.to_pandas(), json.loads(priced.schema.metadata[b"rag.budgets"]))
    report = build_report(outcomes, reported, provenance, invalid, evaluated["same"], gold, known, costs)
    if report.drawn.keys() != known.keys():
        keys, pngs = list(report.drawn), pa.array(list(report.drawn.values()), PNGS)
        write_arrow(pa.table({"key": keys, "pngs": pngs}), drawn_path)
    meta = {f"rag.{k}": v for k, v in provenance.items()}
    files = {
        f"{name}.parquet": table_bytes(
            pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(meta)
        )
        for name, frame in report.tables.items()
    }
    files |= {f"{name}.png": png for name, png in report.plots.items()}
    files["gold_drift.parquet"] = table_bytes(
        pa.Table.from_pandas(drift, schema=DRIFT_SCHEMA, preserve_index=False).replace_schema_metadata(meta)
    )
    figures = pa.Table.from_pandas(costs.reported(), preserve_index=False)
    files[COSTS_REPORT] = table_bytes(figures.replace_schema_metadata(meta | costs.metadata()))
    files["report.md"] = report.markdown.encode()
    files[VERDICT] = json.dumps(report.verdict | {"commit": commit}, indent=1, ensure_ascii=False).encode()
    return Published(report, provenance, files, invalid, gold)
