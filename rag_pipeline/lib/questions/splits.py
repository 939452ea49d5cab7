"""Every question is `dev` (the configurations are chosen on it) or `test` (the choice is confirmed
on it, once): its own `"split"` field when it has one, else a function of its id alone.

The id is hashed to a number u in [0, 1) and the question is `test` when u < the test share: editing,
adding or removing other questions moves none, and raising the share only moves `dev` questions to
`test` (a test question stays test).
"""

from __future__ import annotations

import hashlib

DEV, TEST = "dev", "test"
SPLITS = (DEV, TEST)
TEST_SHARE = 0.3  # RAG_TEST_SHARE's default


def hashed_split(question_id: int | str, test_share: float) -> str:
    """`test` for about `test_share` of the ids, always the same ones for one share."""
    digest = hashlib.sha256(f"split:{question_id}".encode()).digest()
    return TEST if int.from_bytes(digest[:8], "big") / 2**64 < test_share else DEV


def split_of(question_id: int | str, own: str | None, test_share: float) -> str:
    """The question's own split (`own`, from its `"split"` field) or its hashed one."""
    return own if own is not None else hashed_split(question_id, test_share)
