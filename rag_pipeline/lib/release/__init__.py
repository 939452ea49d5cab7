"""The release gate: whether a new index may be served, and the record of what is live."""

from rag_pipeline.lib.release.gate import (
    REJECTED,
    RELEASED,
    Decision,
    budget_problems,
    decide,
    found,
    label_key,
    leak_problem,
    question_results,
    recall,
)
from rag_pipeline.lib.release.ledger import (
    CURRENT,
    CURRENT_KEYS,
    HISTORY,
    QUESTIONS,
    ReleaseError,
    append_history,
    read_current,
    read_history,
    read_released_questions,
    write_release,
)
from rag_pipeline.lib.release.live import (
    checked_current,
    follow_release,
    live_tables,
    released_table,
    verify_release,
)
from rag_pipeline.lib.release.narrow import narrow_live
from rag_pipeline.lib.serving import RELEASE_DIR

__all__ = [
    "CURRENT",
    "CURRENT_KEYS",
    "HISTORY",
    "QUESTIONS",
    "REJECTED",
    "RELEASED",
    "RELEASE_DIR",
    "Decision",
    "ReleaseError",
    "append_history",
    "budget_problems",
    "checked_current",
    "decide",
    "follow_release",
    "found",
    "label_key",
    "leak_problem",
    "live_tables",
    "narrow_live",
    "question_results",
    "read_current",
    "read_history",
    "read_released_questions",
    "recall",
    "released_table",
    "verify_release",
    "write_release",
]
