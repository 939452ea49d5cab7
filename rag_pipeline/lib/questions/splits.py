"""Every question is `dev` (the configurations are chosen on it) or `test` (the choice is confirmed
on it, once): its own `"split"` field when it has one, else drawn by its id within its stratum.

The questions without a field are stratified by category and answerability, so that each stratum
puts the same share in test (an unstratified draw gave categories test shares from 0.27 to 0.41).
Within a stratum each id is hashed to a number u in [0, 1), and the floor(share x size + o) lowest are
`test`, o in [0, 1) a hash of the stratum: so each stratum is within one question of its share, and a
stratum too small for a whole test question still has one with a chance of share x size (a plain
rounding would give none to every stratum of one or two questions). Raising the share only moves
`dev` questions to `test` (a test question stays test), editing a question moves none, and adding or
removing one moves at most one other question of its stratum across the boundary (the experiment
ledger says when a development question that chose moves into test, see
`rag_pipeline.lib.evaluation.looks`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable

DEV, TEST = "dev", "test"
SPLITS = (DEV, TEST)
TEST_SHARE = 0.3  # RAG_TEST_SHARE's default


def hashed(question_id: int | str) -> float:
    """The id's number u in [0, 1): the same for an id read back as text."""
    digest = hashlib.sha256(f"split:{question_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def stratified_splits(
    questions: Iterable[tuple[str, str | None, str, bool]], test_share: float
) -> dict[str, str]:
    """{question id: its split} of (id, own split or None, category, answerable) per question."""
    strata: dict[tuple[str, bool], list[str]] = {}
    splits = {}
    for qid, own, category, answerable in questions:
        if own is not None:
            splits[str(qid)] = own
        else:
            strata.setdefault((category, bool(answerable)), []).append(str(qid))
    for (category, answerable), ids in strata.items():
        ranked = sorted(ids, key=lambda q: (hashed(q), q))
        n_test = math.floor(test_share * len(ranked) + hashed(f"stratum:{category}:{answerable}"))
        splits |= {q: TEST if i < n_test else DEV for i, q in enumerate(ranked)}
    return splits
