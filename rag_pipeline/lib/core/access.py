"""The one access rule, used by every retriever, the served index's filter and the reports.

A note is readable by an asker when it is public (no groups) or shares a group with the asker; an
asker without groups (`None`) may read every note, as when questions carry no `groups`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd

from rag_pipeline.lib.core.names import closest

UNAUTHORIZED = "unauthorized"  # the category of a question about a note its asker may not read


def may_read(groups: Sequence[str] | None, access: Sequence[str]) -> bool:
    return groups is None or len(access) == 0 or bool(set(groups) & set(access))


def unknown_group(groups: Sequence[str], known: Collection[str]) -> str | None:
    """Why an asker's `groups` are wrong (the first that no note and no question names), or None.

    Names are compared exactly: a near miss (`SRE`, `ｓｒｅ`, `ser` for `sre`) would read as a group
    of its own and silently show public notes only, so it is named with the one meant."""
    for group in groups:
        if group not in known:
            near = closest(group, known, within=1)
            hint = f"; did you mean {near!r}?" if near else ""
            listed = ", ".join(sorted(known)) or "none (every note is public)"
            return f"no note and no question names the group {group!r}{hint} (known groups: {listed})"
    return None


def readable_mask(access: Sequence[Sequence[str]], groups: Sequence[str] | None) -> np.ndarray:
    """Per unit (its `access` list), may the asker read it."""
    if groups is None:
        return np.ones(len(access), dtype=bool)
    return np.fromiter((may_read(groups, a) for a in access), dtype=bool, count=len(access))


def leaked_rows(retrieval: pd.DataFrame, groups: dict[str, tuple[str, ...] | None]) -> pd.DataFrame:
    """The retrieved rows (question_id, access of the unit) their question's asker may not read."""
    if retrieval.empty:
        return retrieval
    leaked = [not may_read(groups.get(q), a) for q, a in zip(retrieval["question_id"], retrieval["access"])]
    return retrieval[np.array(leaked, dtype=bool)]


def readable_units(
    retrieval: pd.DataFrame, chunks: pd.DataFrame, groups: dict[str, tuple[str, ...] | None]
) -> list[int]:
    """Per retrieval row, how many units of its kind its asker may read: chunks, or for `+parent`
    configurations the parent sections a ranking of every readable chunk is sure to pass (an
    under-filled answer is one below min(k, this))."""
    access = chunks["access"].tolist() if "access" in chunks else [[]] * len(chunks)
    counts: dict[tuple[tuple[str, ...] | None, bool], int] = {}
    out = []
    for q, retriever in zip(retrieval["question_id"], retrieval["retriever"]):
        key = (groups.get(q), "+parent" in retriever)
        if key not in counts:
            mask = readable_mask(access, key[0])
            counts[key] = outermost_parents(chunks[mask]) if key[1] else int(mask.sum())
        out.append(counts[key])
    return out


def outermost_parents(chunks: pd.DataFrame) -> int:
    """The distinct parent spans of `chunks` that lie inside no other one of the same note.

    A fixed-size chunk crossing a heading has for parent the span of every section it touches, so
    parents nest, and `+parent` passes no parent lying inside one already passed: of nested
    parents it may pass only the outer one. Each outermost parent is passed once its chunk ranks,
    so a full ranking passes at least this many units (more when an inner one ranks first)."""
    spans = chunks[["note", "parent_start", "parent_end"]].drop_duplicates()
    # by start, the longest first: a span lies inside another iff an earlier one ends at or after its end
    spans = spans.sort_values(["note", "parent_start", "parent_end"], ascending=[True, True, False])
    reach = spans.groupby("note")["parent_end"].cummax().groupby(spans["note"]).shift()
    return int((reach.isna() | (spans["parent_end"] > reach)).sum())
