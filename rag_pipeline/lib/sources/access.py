"""The access markup of front matter: the groups `access` names, read so that it fails closed.

One rule for a note's own front matter and for each `cascade` entry of a section's `_index.md`
(`cascade.py`): the fields are read at a place `at` (`""` for a note, `cascade` or `cascade[1]`
for an entry), `access` there and under its `params`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_pipeline.lib.core import edit_distance

# under the data directory: the notes the last source step read, each with its access now (what a
# revocation changes first)
SOURCE_NOTES = "notes/source_notes.parquet"


class NotesSourceError(ValueError):
    """The notes repository, ref or a note in it cannot be read."""


# Keys within `NEAR` edits of `access` that are words of their own, read as unrelated fields. Any
# other key this close, anywhere in the front matter, is taken for a misspelt or misplaced `access`
# and stops the build: a typo must never leave a note public.
UNRELATED_KEYS = frozenset({"accent", "accept", "excess", "success"})
NEAR = 2


def access_groups(fields: Mapping[Any, Any], where: str, at: str = "") -> tuple[str, ...]:
    """The groups front matter `fields` (found at `at`) give; empty (public) only when no `access` is given.

    Fails closed: markup that could be meant to restrict a note is an error naming it, never read
    as public. Read: `access` and `params.access` (where Hugo keeps custom fields; both given, they
    must name the same groups), as `access: sre`, `access: sre, payments` (split at commas) or
    `access: [sre, payments]`. Rejected: a key within `NEAR` edits of `access` (any case, at any
    depth) other than those two and `UNRELATED_KEYS`, an empty value (`access:`, `access: ""`,
    `access: []`), an empty group name, anything but strings, `params` that is not a mapping."""
    near_keys(fields, at, where, read_at=(at, joined(at, "params")))
    params = fields.get("params")
    if params is not None and not isinstance(params, Mapping):
        raise NotesSourceError(
            f"{where}: `{joined(at, 'params')}` must be a mapping of fields, got {params!r}; "
            "write `params: {access: [sre]}`"
        )
    top = _groups(fields, joined(at, "access"), where)
    nested = _groups(params or {}, joined(at, "params.access"), where)
    if top is not None and nested is not None and top != nested:
        raise NotesSourceError(
            f"{where}: `{joined(at, 'access')}` {list(top)} and `{joined(at, 'params.access')}` "
            f"{list(nested)} name different groups; give the groups once"
        )
    return top or nested or ()


def gives_access(fields: Mapping[Any, Any]) -> bool:
    """Whether front matter names groups itself (`access` or `params.access`), read or not."""
    params = fields.get("params")
    return "access" in fields or (isinstance(params, Mapping) and "access" in params)


def joined(at: str, name: str) -> str:
    return f"{at}.{name}" if at else name


def near_keys(value: Any, path: str, where: str, read_at: tuple[str, ...]) -> None:
    """Raise on the first key under `path`, at any depth, that reads like `access` but is not read
    as it: `access` is read only at the places `read_at`."""
    if isinstance(value, list):
        for i, inner in enumerate(value):
            near_keys(inner, f"{path}[{i}]", where, read_at)
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            name = joined(path, str(key))
            hint = _misread(key, path, read_at)
            if hint:
                raise NotesSourceError(f"{where}: front matter key {name!r} is not read; {hint}")
            near_keys(inner, name, where, read_at)


def _misread(key: Any, path: str, read_at: tuple[str, ...]) -> str | None:
    """What to write instead of `key` (found under `path`) when it reads like `access`; else None."""
    folded = key.strip().lower() if isinstance(key, str) else ""
    if (key == "access" and path in read_at) or folded in UNRELATED_KEYS:
        return None
    if edit_distance(folded, "access") > NEAR:
        return None
    if path not in read_at:
        places = " or ".join(f"under `{p}`" if p else "at the top level" for p in read_at)
        return f"groups are read only from `access` {places}"
    if key.lower() == "access":
        return "write `access` (lower case)"
    return "did you mean `access`? (a key this close to `access` stops the build, so that a typo never leaves a note public)"


def _groups(fields: Mapping[Any, Any], name: str, where: str) -> tuple[str, ...] | None:
    """The groups `fields["access"]` names (None when absent), `name` being how the note spells it."""
    if "access" not in fields:
        return None
    value = fields["access"]
    if value is None or value == [] or (isinstance(value, str) and not value.strip()):
        raise NotesSourceError(
            f"{where}: `{name}` is empty ({value!r}); a public note omits the key, "
            "a restricted one lists its groups (`access: [sre]`)"
        )
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(n, str) for n in items):
        raise NotesSourceError(
            f"{where}: `{name}` must be a group name or a list of group names, got {value!r}"
        )
    names = [part.strip() for item in items for part in item.split(",")]
    if not all(names):
        raise NotesSourceError(f"{where}: `{name}` holds an empty group name: {value!r}")
    return tuple(sorted(set(names)))
