"""The serving evaluation's report: every served table's measurements at one commit, with what they
were computed from, and the view of them a person reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.serving.measure import RECALL_K


@dataclass
class ServingReport:
    frame: pd.DataFrame  # reports/serving.parquet: per strategy, index type and k
    provenance: dict[str, str]  # what it was computed from, in the file's metadata as `rag.<key>`

    def table(self) -> pa.Table:
        table = pa.Table.from_pandas(self.frame, preserve_index=False)
        return table.replace_schema_metadata({f"rag.{k}": v for k, v in self.provenance.items()})

    def shown(self) -> pd.DataFrame:
        """The measurements without their bookkeeping, latencies in whole milliseconds."""
        shown = self.frame.drop(columns=["commit", "embedding_version", "table_version"])
        return shown.assign(**{c: shown[c].round().astype(int) for c in ("latency_p50_ms", "latency_p95_ms")})

    def figures(self) -> dict[str, float]:
        at_k = self.frame[self.frame["k"] == RECALL_K]
        return {
            f"min recall_vs_exact@{RECALL_K}": float(at_k["recall_vs_exact"].min()),
            f"max latency_p95_ms@{RECALL_K}": float(at_k["latency_p95_ms"].max()),
        }


def serving_report(
    measured: Sequence[pd.DataFrame],
    questions: pd.DataFrame,
    repository: str,
    commit: str,
    questions_path: str,
    code_versions: dict[str, object],
) -> ServingReport:
    """The tables' `measured` frames at `commit` of `repository`, on the `questions` of the file at
    `questions_path`, computed by `code_versions`."""
    frame = pd.concat(list(measured), ignore_index=True).assign(commit=commit)
    provenance = {
        "repository": repository,
        "commit": commit,
        "questions_file": questions_path,
        "questions_sha256": str(questions["questions_sha256"].iloc[0]) if len(questions) else "",
        "embedding_version": str(frame["embedding_version"].iloc[0]),
        "code_versions": json.dumps(code_versions),
    }
    return ServingReport(frame, provenance)
