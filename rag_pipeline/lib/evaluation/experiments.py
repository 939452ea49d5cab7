"""The experiment ledger: every evaluation's per-question outcomes, kept under an id of what shaped them.

Under the data directory:
- `experiments/index.parquet`: one row per experiment (`INDEX_COLUMNS`), in the order recorded;
- `experiments/<id>/outcomes.parquet`: one row per configuration (strategy x retriever) and question:
  first evidence rank, evidence hit at each reported k and within the headline budget, characters
  passed, leaked units, gold status and a digest of the question and its evidence;
- `experiments/<id>/judged.parquet`: per answered configuration and question, the judge's score on each
  criterion (`faithful`, `correct`, `cites_support`) of the latest answers judged under that experiment;
- `experiments/current.json`: the experiment the reports on disk come from, and the one built before it.

The id digests what shaped the outcomes (see `experiment_settings`), so a rerun of the same experiment
writes nothing. A run never deletes an experiment; `prune` does. The ledger is a record, not an input:
nothing the pipeline computes reads it, so an incremental build equals a fresh one whatever it holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from rag_pipeline.lib.core import AnyPath, read_frame, write_bytes, write_frame
from rag_pipeline.lib.evaluation.metrics import HEADLINE_BUDGET, REPORT_KS, chars_matrix, first_ranks_of
from rag_pipeline.lib.evaluation.verdict import DIGITS
from rag_pipeline.lib.questions.labels import asker_groups

LEDGER = "experiments"
INDEX = "index.parquet"
OUTCOMES = "outcomes.parquet"
JUDGED = "judged.parquet"
CURRENT = "current.json"
SCORED = ("ok", "carried")  # the gold statuses under which a question is scored
HIT = f"hit@{HEADLINE_BUDGET}chars"  # the headline measure, per question
INDEX_COLUMNS = [
    "id",
    "time",
    "commit",
    "embedding_version",
    "questions_sha256",
    "strategies",
    "retrievers",
    "n_questions",
    "best",
    "best_value",
    "settings",
]


def experiment_settings(
    outcomes: pd.DataFrame, provenance: Mapping[str, str], ranking: Mapping[str, object]
) -> dict[str, object]:
    """What shaped the outcomes, readably: the embedder, the strategy definitions, the retrievers, the
    analyzer, the reranker and retrieval settings (`ranking`), the cleaner and evaluation code, the
    notes commit and the questions file."""
    code = json.loads(provenance["code_versions"])
    return {
        "embedding_version": provenance["embedding_version"],
        "strategies": code["chunkers"],
        "retrievers": list(dict.fromkeys(outcomes["retriever"])),
        "analyzer": code["analyzer"],
        **ranking,
        "code": {"cleaner": code["cleaner"], "evaluation": code["evaluation"]},
        "commit": provenance["commit"],
        "questions_sha256": provenance["questions_sha256"],
    }


def experiment_id(settings: Mapping[str, object]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


def question_digest(row) -> str:
    """The question as asked and labelled (text, evidence notes and phrases, the asker's groups): two
    experiments compare a question only when it is the same one in both."""
    evidence = [[e["note"], e["text"]] for e in row.evidence] if row.evidence is not None else []
    what = [row.q, evidence, asker_groups(row)]
    return hashlib.sha256(json.dumps(what, ensure_ascii=False).encode()).hexdigest()[:16]


def ledger_outcomes(outcomes: pd.DataFrame, questions: pd.DataFrame) -> pd.DataFrame:
    """Per configuration, every question of the questions file: the scored ones with their outcome,
    the others (stale or invalid gold) with their status and no outcome."""
    first = first_ranks_of(outcomes)
    chars = chars_matrix(outcomes)
    scored = outcomes[["strategy", "retriever", "question_id", "first_evidence_rank"]].copy()
    for k in REPORT_KS:
        scored[f"hit@{k}"] = first <= k
    scored[HIT] = first <= (chars <= HEADLINE_BUDGET).sum(axis=1)
    for k in REPORT_KS:
        scored[f"chars@{k}"] = chars[:, k - 1].astype(np.int64)
    scored["leaked_units"] = [len(r) for r in outcomes["leak_ranks"]]
    asked = pd.DataFrame(
        {
            "question_id": questions["question_id"].astype(str),
            "question_sha256": [question_digest(row) for row in questions.itertuples(index=False)],
            "category": questions["category"],
            "answerable": questions["answerable"].astype(bool),
            "gold_status": questions.get("gold_status", "ok"),
        }
    )
    configurations = outcomes[["strategy", "retriever"]].drop_duplicates()
    frame = configurations.merge(asked, how="cross").merge(
        scored, on=["strategy", "retriever", "question_id"], how="left"
    )
    frame["first_evidence_rank"] = frame["first_evidence_rank"].astype("Int64")
    for column in [*(f"hit@{k}" for k in REPORT_KS), HIT]:
        frame[column] = frame[column].astype("boolean")
    for column in [*(f"chars@{k}" for k in REPORT_KS), "leaked_units"]:
        frame[column] = frame[column].astype("Int64")
    return frame


def scored_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows a measure is computed over: answerable questions scored under ok or carried gold."""
    keep = frame["answerable"].astype(bool) & frame["gold_status"].isin(SCORED) & frame[HIT].notna()
    return frame[keep]


def configurations(frame: pd.DataFrame) -> pd.DataFrame:
    """Per configuration (`strategy/retriever`): the headline value and MRR@10 over its scored
    questions, best first (ties on the rounded headline broken by MRR@10, as in the verdict)."""
    rows = []
    for (strategy, retriever), run in scored_rows(frame).groupby(["strategy", "retriever"], sort=False):
        ranks = run["first_evidence_rank"].astype("Float64").to_numpy(dtype=float, na_value=np.inf)
        rows.append(
            {
                "configuration": f"{strategy}/{retriever}",
                "value": float(run[HIT].astype(bool).mean()),
                "mrr@10": float(np.where(ranks <= 10, 1 / ranks, 0.0).mean()),
                "n_questions": len(run),
            }
        )
    table = pd.DataFrame(rows, columns=["configuration", "value", "mrr@10", "n_questions"])
    order = table.assign(rounded=table["value"].round(DIGITS))
    return order.sort_values(["rounded", "mrr@10"], ascending=False, kind="stable").drop(columns="rounded")


def embedder_name(embedding_version: str) -> str:
    """`backend:model` of an `embedding_version`, without the model's version and digest."""
    return ", ".join(v.split("@", 1)[0].split("/", 1)[0] for v in embedding_version.split(", "))


def _flat(settings: dict, prefix: str = "") -> dict[str, object]:
    flat = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat |= _flat(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def changed(a: dict, b: dict) -> dict[str, tuple[object, object]]:
    """{setting: (a's value, b's value)} for every setting that differs (missing: None)."""
    fa, fb = _flat(a), _flat(b)
    return {k: (fa.get(k), fb.get(k)) for k in dict.fromkeys([*fa, *fb]) if fa.get(k) != fb.get(k)}


def read_index(root: AnyPath) -> pd.DataFrame:
    path = root / INDEX
    return read_frame(path) if path.exists() else pd.DataFrame(columns=INDEX_COLUMNS)


def read_outcomes(root: AnyPath, experiment: str) -> pd.DataFrame:
    return read_frame(root / experiment / OUTCOMES)


def read_current(root: AnyPath) -> dict[str, str | None]:
    """{"id": the experiment of the reports on disk, "previous": the one built before it}."""
    path = root / CURRENT
    return json.loads(path.read_text()) if path.exists() else {"id": None, "previous": None}


def record_experiment(
    root: AnyPath,
    outcomes: pd.DataFrame,
    questions: pd.DataFrame,
    provenance: Mapping[str, str],
    ranking: Mapping[str, object],
    now: datetime | None = None,
) -> str:
    """Record this evaluation under its id (nothing is written when it is recorded already) and make
    it the current experiment; returns its id."""
    settings = experiment_settings(outcomes, provenance, ranking)
    experiment = experiment_id(settings)
    index = read_index(root)
    if experiment not in set(index["id"]) or not (root / experiment / OUTCOMES).exists():
        frame = ledger_outcomes(outcomes, questions)
        # the outcomes first: an id in the index always has them
        write_frame(frame, root / experiment / OUTCOMES)
        best = configurations(frame).head(1)
        row = {
            "id": experiment,
            "time": (now or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
            "commit": provenance["commit"],
            "embedding_version": provenance["embedding_version"],
            "questions_sha256": provenance["questions_sha256"],
            "strategies": list(settings["strategies"]),
            "retrievers": settings["retrievers"],
            "n_questions": int(best["n_questions"].iloc[0]) if len(best) else 0,
            "best": best["configuration"].iloc[0] if len(best) else "",
            "best_value": round(float(best["value"].iloc[0]), DIGITS) if len(best) else float("nan"),
            "settings": json.dumps(settings, sort_keys=True, ensure_ascii=False),
        }
        others = index[index["id"] != experiment]
        index = (
            pd.concat([others, pd.DataFrame([row])], ignore_index=True)
            if len(others)
            else pd.DataFrame([row])
        )
        write_frame(index[INDEX_COLUMNS], root / INDEX)
    current = read_current(root)
    if current["id"] != experiment:
        write_bytes(json.dumps({"id": experiment, "previous": current["id"]}).encode(), root / CURRENT)
    return experiment


def record_judged(root: AnyPath, scores: pd.DataFrame, questions: pd.DataFrame) -> str | None:
    """Record judged outcomes (per strategy, retriever, question_id, llm_version and judge_version, a
    score column per criterion) under the current experiment, replacing what it held (written only
    when it changed); returns the experiment's id, None when none is current."""
    current = read_current(root)["id"]
    if current is None:
        return None
    asked = pd.DataFrame(
        {
            "question_id": questions["question_id"].astype(str),
            "question_sha256": [question_digest(row) for row in questions.itertuples(index=False)],
            "category": questions["category"],
            "answerable": questions["answerable"].astype(bool),
        }
    )
    first = ["strategy", "retriever", "question_id", "question_sha256", "category", "answerable"]
    frame = scores.merge(asked, on="question_id", how="inner")
    frame = frame[first + [c for c in frame.columns if c not in first]].reset_index(drop=True)
    path = root / current / JUDGED
    if not path.exists() or not read_frame(path).equals(frame):
        write_frame(frame, path)
    return current


def prune(root: AnyPath, keep: int) -> list[str]:
    """Remove all but the `keep` newest experiments (the current one and the one before it are always
    kept); returns the ids removed. The index is rewritten first, so an interrupted prune leaves at
    most an unlisted directory behind."""
    index = read_index(root)
    current = read_current(root)
    kept = set(index["id"].iloc[len(index) - keep :] if keep else []) | {current["id"], current["previous"]}
    gone = [e for e in index["id"] if e not in kept]
    if not gone:
        return []
    write_frame(index[index["id"].isin(kept)].reset_index(drop=True), root / INDEX)
    for experiment in gone:
        (root / experiment / JUDGED).unlink(missing_ok=True)
        path = root / experiment / OUTCOMES
        path.unlink(missing_ok=True)
        if isinstance(path, Path) and path.parent.exists() and not any(path.parent.iterdir()):
            path.parent.rmdir()  # an object store has no directory to remove
    return gone
