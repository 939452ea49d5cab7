"""Judged outcomes in the experiment ledger: `experiments/<id>/judged.parquet`, per answered
configuration and question, the judge's score on each criterion of the latest answers judged under
that experiment."""

from __future__ import annotations

import pandas as pd

from rag_pipeline.lib.core import AnyPath, read_frame, write_frame
from rag_pipeline.lib.evaluation.experiments import JUDGED, question_columns, read_current


def record_judged(root: AnyPath, scores: pd.DataFrame, questions: pd.DataFrame) -> str | None:
    """Record judged outcomes (per strategy, retriever, question_id, llm_version and judge_version, a
    score column per criterion) under the current experiment, replacing what it held (written only
    when it changed); returns the experiment's id, None when none is current."""
    current = read_current(root)["id"]
    if current is None:
        return None
    asked = question_columns(questions)
    first = ["strategy", "retriever", "question_id", "question_sha256", "category", "answerable", "split"]
    frame = scores.merge(asked, on="question_id", how="inner")
    frame = frame[first + [c for c in frame.columns if c not in first]].reset_index(drop=True)
    path = root / current / JUDGED
    if not path.exists() or not read_frame(path).equals(frame):
        write_frame(frame, path)
    return current
