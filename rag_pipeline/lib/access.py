"""The one access rule, used by every retriever, the served index's filter and the reports.

A note is readable by an asker when it is public (no groups) or shares a group with the asker; an
asker without groups (`None`) may read every note, as when questions carry no `groups`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

UNAUTHORIZED = "unauthorized"  # the category of a question about a note its asker may not read


def may_read(groups: Sequence[str] | None, access: Sequence[str]) -> bool:
    return groups is None or len(access) == 0 or bool(set(groups) & set(access))


def readable_mask(access: Sequence[Sequence[str]], groups: Sequence[str] | None) -> np.ndarray:
    """Per unit (its `access` list), may the asker read it."""
    if groups is None:
        return np.ones(len(access), dtype=bool)
    return np.fromiter((may_read(groups, a) for a in access), dtype=bool, count=len(access))
