"""Names a person types: how far a typo is from the name meant, and which known name was meant.

One measure for every "did you mean" (front matter keys, question fields, `RAG_*` variables, groups),
so a near miss is judged the same way wherever it is made."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable


def edit_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (optimal string alignment): insertions, deletions,
    substitutions and swaps of two neighbouring characters each cost 1."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], previous2[j - 2] + 1)
        previous2, previous = previous, row
    return previous[len(b)]


def fold(name: str) -> str:
    """A name with case and character width set aside (`SRE`, `ｓｒｅ` -> `sre`)."""
    return unicodedata.normalize("NFKC", name).casefold()


def closest(name: str, known: Iterable[str], within: int) -> str | None:
    """The known name nearest to `name` (after `fold`), if it lies within `within` edits; ties go
    to the first in sorted order, so the suggestion does not depend on the order given."""
    folded = fold(name)
    best: tuple[int, str] | None = None
    for candidate in sorted(known):
        distance = edit_distance(folded, fold(candidate))
        if distance <= within and (best is None or distance < best[0]):
            best = (distance, candidate)
    return None if best is None else best[1]
