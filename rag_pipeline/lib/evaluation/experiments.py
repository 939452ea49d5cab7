"""The experiment ledger: every evaluation's per-question outcomes, kept under an id of what shaped them.

Under the data directory:
- `experiments/index.parquet`: one row per experiment (`INDEX_COLUMNS`), in the order recorded;
- `experiments/<id>/outcomes.parquet`: one row per configuration (strategy x retriever) and question:
  first evidence rank, evidence hit at each reported k and within the headline budget, characters
  passed, leaked units, gold status and a digest of the question and its evidence;
- `experiments/<id>/experiment.json`: its row of the index, so the folder says all about it;
- `experiments/<id>/judged.parquet`: per answered configuration and question, the judge's score on each
  criterion (`faithful`, `correct`, `cites_support`) of the latest answers judged under that experiment;
- `experiments/current.json`: the experiment the reports on disk come from, and the one built before it;
- `experiments/looks.parquet`: the choices each test split confirmed (`rag_pipeline.lib.evaluation.looks`).

`index.parquet` and `current.json` are derived from the folders: a missing or unreadable one raises
`LedgerError`, and `repair` (`python -m rag_pipeline.experiments repair`, and every run) rebuilds it.

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

from rag_pipeline.lib.core import AnyPath, Location, clipped, read_frame, write_bytes, write_frame
from rag_pipeline.lib.evaluation.metrics import HEADLINE_BUDGET, REPORT_KS, chars_matrix, first_ranks_of
from rag_pipeline.lib.evaluation.ranking import HIT, best_fields
from rag_pipeline.lib.questions.gold_file import asker_groups

LEDGER = "experiments"
INDEX = "index.parquet"
OUTCOMES = "outcomes.parquet"
RECORD = "experiment.json"
JUDGED = "judged.parquet"
CURRENT = "current.json"
REPAIR = "python -m rag_pipeline.experiments repair"
NOT_RECORDED = "this evaluation was not recorded in the experiment ledger"  # a build's warning
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
    "tune",
]


class LedgerError(ValueError):
    """`index.parquet` or `current.json` is missing or unreadable while experiments are recorded."""

    def __init__(self, path: AnyPath, problem: str):
        self.what = f"{path} {problem}"
        super().__init__(f"{self.what}; `{REPAIR}` rebuilds it from the experiment folders")


def experiment_settings(
    outcomes: pd.DataFrame, provenance: Mapping[str, str], ranking: Mapping[str, object]
) -> dict[str, object]:
    """What shaped the outcomes, readably: the embedder, the strategy definitions, the retrievers, the
    analyzer, the reranker, retrieval settings and test share (`ranking`), the cleaner and evaluation
    code, the notes commit and the questions file."""
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


def question_columns(questions: pd.DataFrame) -> pd.DataFrame:
    """What the ledger records of each question beside its outcomes: its id, `question_digest`,
    category, answerability and split."""
    return pd.DataFrame(
        {
            "question_id": questions["question_id"].astype(str),
            "question_sha256": [question_digest(row) for row in questions.itertuples(index=False)],
            "category": questions["category"],
            "answerable": questions["answerable"].astype(bool),
            "split": questions["split"],
        }
    )


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
    asked = question_columns(questions).assign(gold_status=questions.get("gold_status", "ok"))
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


def folder_files(root: AnyPath) -> dict[str, set[str]]:
    """{experiment id: the names of the files in its folder}, listed at once."""
    if isinstance(root, Location):
        found = root.files(recursive=True)
    else:
        found = [p for p in root.glob("*/*") if p.is_file()] if root.is_dir() else []
    folders: dict[str, set[str]] = {}
    for path in found:
        parts = str(path)[len(str(root)) + 1 :].split("/")
        if len(parts) == 2:
            folders.setdefault(parts[0], set()).add(parts[1])
    return folders


def recorded(root: AnyPath) -> list[str]:
    """The ids of the experiments whose outcomes are on disk."""
    return sorted(e for e, names in folder_files(root).items() if OUTCOMES in names)


def read_index(root: AnyPath) -> pd.DataFrame:
    """The index; `tune` (the tuning session a trial ran in, or empty) is empty in an index written
    before it existed."""
    path = root / INDEX
    if not path.exists():
        if found := recorded(root):
            raise LedgerError(path, f"is missing, and {len(found)} experiment folder(s) are there")
        return pd.DataFrame(columns=INDEX_COLUMNS)
    try:
        index = read_frame(path)
    except (OSError, ValueError) as exc:  # Arrow's errors are one or the other
        raise LedgerError(path, f"cannot be read ({clipped(exc, 300)})") from None
    if "id" not in index:
        raise LedgerError(path, "has no `id` column")
    return index if "tune" in index else index.assign(tune="")


def add_to_index(root: AnyPath, index: pd.DataFrame, row: dict[str, object]) -> None:
    """`index` (as read) with `row` in place of any row of the same id, written."""
    others = index[index["id"] != row["id"]]
    index = (
        pd.concat([others, pd.DataFrame([row])], ignore_index=True) if len(others) else pd.DataFrame([row])
    )
    write_frame(index[INDEX_COLUMNS], root / INDEX)


def read_outcomes(root: AnyPath, experiment: str) -> pd.DataFrame:
    return read_frame(root / experiment / OUTCOMES)


def read_current(root: AnyPath) -> dict[str, str | None]:
    """{"id": the experiment of the reports on disk, "previous": the one built before it}."""
    path = root / CURRENT
    if not path.exists():
        if found := recorded(root):
            raise LedgerError(path, f"is missing, and {len(found)} experiment folder(s) are there")
        return {"id": None, "previous": None}
    try:
        current = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise LedgerError(path, f"cannot be read ({exc})") from None
    if not isinstance(current, dict) or set(current) != {"id", "previous"}:
        raise LedgerError(path, 'is not {"id": …, "previous": …}')
    return current


def record_experiment(
    root: AnyPath,
    outcomes: pd.DataFrame,
    questions: pd.DataFrame,
    provenance: Mapping[str, str],
    ranking: Mapping[str, object],
    now: datetime | None = None,
) -> str:
    """Record this evaluation under its id (nothing is written when it is recorded already) and make
    it the current experiment; returns its id (`looks.record_confirmed` counts a look with it)."""
    settings = experiment_settings(outcomes, provenance, ranking)
    experiment = experiment_id(settings)
    index, current = read_index(root), read_current(root)  # before this experiment's folder is there
    if experiment not in set(index["id"]) or not (root / experiment / OUTCOMES).exists():
        frame = ledger_outcomes(outcomes, questions)
        # the outcomes first, then the row: an id in the index always has them
        write_frame(frame, root / experiment / OUTCOMES)
        row = {
            "id": experiment,
            "time": (now or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
            "commit": provenance["commit"],
            "embedding_version": provenance["embedding_version"],
            "questions_sha256": provenance["questions_sha256"],
            "strategies": list(settings["strategies"]),
            "retrievers": settings["retrievers"],
            **best_fields(frame),
            "settings": json.dumps(settings, sort_keys=True, ensure_ascii=False),
            "tune": "",
        }
        write_bytes(json.dumps(row, ensure_ascii=False, indent=1).encode(), root / experiment / RECORD)
        add_to_index(root, index, row)
    if current["id"] != experiment:
        write_bytes(json.dumps({"id": experiment, "previous": current["id"]}).encode(), root / CURRENT)
    return experiment


def import_experiment(source: AnyPath, root: AnyPath, experiment: str, tune: str) -> None:
    """Experiment `experiment` of the ledger `source` recorded in the ledger `root` too, marked as a
    trial of the tuning session `tune`; `root`'s current experiment stays."""
    index = read_index(source)
    row = index[index["id"] == experiment].iloc[0].to_dict() | {"tune": tune}
    target = root / experiment / OUTCOMES
    if not target.exists():
        write_bytes((source / experiment / OUTCOMES).read_bytes(), target)
    add_to_index(root, read_index(root), row)


def prune(root: AnyPath, keep: int) -> list[str]:
    """Remove all but the `keep` newest experiments (the current one and the one before it are always
    kept); returns the ids removed. The folders go first: an interrupted prune leaves at most index
    rows without outcomes, which `repair` drops."""
    index = read_index(root)
    current = read_current(root)
    kept = set(index["id"].iloc[len(index) - keep :] if keep else []) | {current["id"], current["previous"]}
    gone = [e for e in index["id"] if e not in kept]
    if not gone:
        return []
    for experiment in gone:
        for name in (OUTCOMES, RECORD, JUDGED):
            (root / experiment / name).unlink(missing_ok=True)
        folder = root / experiment
        if isinstance(folder, Path) and folder.exists() and not any(folder.iterdir()):
            folder.rmdir()  # an object store has no directory to remove
    write_frame(index[index["id"].isin(kept)].reset_index(drop=True), root / INDEX)
    return gone
