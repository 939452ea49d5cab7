"""One strategy's per-question outcomes from its retrieval, which strategies share their chunks, what
the reports are computed from, and the numbers the summary page plots."""

from __future__ import annotations

import json

import pandas as pd

from rag_pipeline.lib.core import content_version
from rag_pipeline.lib.evaluation.metrics import HEADLINE, HEADLINE_BUDGET, question_outcomes
from rag_pipeline.lib.questions import questions_from_frame


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
        raise ValueError(f"the retrieval of {strategy} holds no row: no question to evaluate")
    return pd.concat(frames, ignore_index=True)


def same_chunks(spans: dict[str, pd.DataFrame], keep: str) -> dict[str, str]:
    """{strategy: an earlier one with exactly the same chunk spans (note, start, end)}; `keep` (the
    baseline's strategy) comes first, so it is never the one pointed away from."""
    seen: dict[str, str] = {}
    same = {}
    for name in sorted(spans, key=lambda n: n != keep):
        frame = spans[name].sort_values(["note", "start", "end"])
        key = content_version(frame, ["note", "start", "end"])
        if key in seen:
            same[name] = seen[key]
        seen.setdefault(key, name)
    return same


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
            (HEADLINE, f"recall@{HEADLINE_BUDGET}chars"),
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
    code_versions: dict[str, object],
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
        "code_versions": json.dumps(code_versions | {"analyzer": str(outcomes["analyzer"].iloc[0])}),
    }
