"""How many choices a test split has confirmed: the ledger counts every confirmation per questions file.

A test split stays an honest check only while few choices are confirmed on it: each look that
decides something lets its questions shape what is kept, and after enough looks the test questions
are over-fitted too. `experiments/looks.parquet` holds one row per confirmation (a new experiment's
verdict, a tuning session's best trial): `time`, `questions_sha256`, `experiment`, `by`. It is a
record, never pruned, and nothing the pipeline computes reads it.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

from rag_pipeline.lib.core import AnyPath, read_frame, write_frame

LOOKS = "looks.parquet"
LOOK_COLUMNS = ["time", "questions_sha256", "experiment", "by"]


def read_looks(root: AnyPath) -> pd.DataFrame:
    path = root / LOOKS
    return read_frame(path) if path.exists() else pd.DataFrame(columns=LOOK_COLUMNS)


def record_look(
    root: AnyPath, questions_sha256: str, experiment: str, by: str, now: datetime | None = None
) -> int:
    """Count one confirmation on the test split of `questions_sha256`; returns how many it has had."""
    row = {
        "time": (now or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        "questions_sha256": questions_sha256,
        "experiment": experiment,
        "by": by,
    }
    looks = read_looks(root)
    looks = pd.concat([looks, pd.DataFrame([row])], ignore_index=True) if len(looks) else pd.DataFrame([row])
    write_frame(looks[LOOK_COLUMNS], root / LOOKS)
    return int((looks["questions_sha256"] == questions_sha256).sum())


def look_counts(root: AnyPath) -> dict[str, int]:
    """{questions_sha256: the choices its test split has confirmed}."""
    return read_looks(root)["questions_sha256"].value_counts().to_dict()


def looks_sentence(questions_sha256: str, count: int, limit: int) -> str:
    """What the verdict and `experiments list` say about a test split's reuse; a warning past `limit`
    (RAG_TEST_LOOKS)."""
    said = (
        f"the test split of questions {questions_sha256[:8]} has confirmed {count} "
        f"choice{'' if count == 1 else 's'}"
    )
    if count > limit:
        said += (
            f"; warning: past RAG_TEST_LOOKS={limit} it is over-used, its figures now flatter what was "
            "chosen on it: add new test questions"
        )
    return said
