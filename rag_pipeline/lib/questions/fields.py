"""The fields a question may carry. Any other is an error naming the question and the field, with the
one meant when it is near: a misspelt `critical` or `groups` would silently drop the flag or let the
asker read every note. Fields of your own start with `x-` and are ignored."""

from __future__ import annotations

from rag_pipeline.lib.core import closest

# every field a question may carry; `relabelled` is written by `gold refresh`, `generated` and
# `generator` mark generated questions, `split` puts a question in `dev` or `test`, `source`
# says where a hand-labelled question came from
FIELDS = frozenset(
    {"id", "q", "slug", "section", "evidence", "slug2", "section2", "evidence2", "category"}
    | {"answer_pattern", "groups", "commit", "critical", "relabelled", "generated", "generator", "split"}
    | {"source"}
)
OWN_FIELD_PREFIX = "x-"
ASKED = "asked"  # the `source` of a question a user asked `ask` (`gold from-asks`)
SOURCES = ("hand", ASKED)


def awaiting_evidence(item: object) -> bool:
    """An asked question no person has given its evidence yet (no `slug`, not even `null`): it is
    not scored, and `gold status` lists it."""
    return isinstance(item, dict) and item.get("source") == ASKED and "slug" not in item


def unknown_field(item: dict) -> str | None:
    """What is wrong with the first field of `item` that is neither known nor one's own, or None."""
    for name in item:
        if name not in FIELDS and not (isinstance(name, str) and name.startswith(OWN_FIELD_PREFIX)):
            near = closest(str(name), FIELDS, within=2)
            own = f"fields of your own start with {OWN_FIELD_PREFIX!r}"
            return f"unknown field {name!r}; " + (f"did you mean {near!r}? ({own})" if near else own)
    return None
