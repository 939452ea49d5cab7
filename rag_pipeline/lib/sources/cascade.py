"""Hugo's `cascade`: the `access` a section's `_index.md` passes down to the notes below it.

Read as Hugo applies it: `cascade` is a mapping or a list of them, each giving fields at its top
level or under `params` (`access` in either place is one field, as in a note) to the pages below
the section (its `target` (or the older `_target`) narrowing them by `path` and `kind` globs). A
note's own `access` wins; else the closest `_index.md` above it one of whose entries matches it.
Fails closed: an `_index.md` that cannot be read, an entry giving `access` whose target depends on
what is not known here (the Hugo environment, the language or site), or keys Hugo refuses stop the
build with one line naming the `_index.md`. Entries that give no `access` are not read."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from rag_pipeline.lib.core import edit_distance
from rag_pipeline.lib.sources.access import NEAR, NotesSourceError, access_groups, gives_access, near_keys
from rag_pipeline.lib.sources.frontmatter import FrontMatterError, split_front_matter

INDEX = "_index.md"
CONTENT = "content"  # Hugo's content directory: logical paths start below it
NOTE_KIND = "page"  # the Hugo kind of every note (a leaf bundle or a regular page)
PAGE_KINDS = ("home", "page", "section", "taxonomy", "term")  # a `kind` glob must match one
READ_TARGETS = ("path", "kind")
UNREAD_TARGETS = ("environment", "lang", "sites")  # chosen when Hugo builds, unknown here
REFUSED = ("kind", "path", "lang", "cascade")  # keys Hugo refuses in a cascade entry


@dataclass(frozen=True)
class Cascaded:
    """The groups a section cascades onto a note, and the `_index.md` that gives them."""

    groups: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Entry:
    """One `cascade` entry of an `_index.md` that gives `access`."""

    groups: tuple[str, ...]
    where: str
    path: re.Pattern[str] | None = None
    kind: re.Pattern[str] | None = None

    def applies(self, logical: str) -> bool:
        return (self.kind is None or bool(self.kind.match(NOTE_KIND))) and (
            self.path is None or bool(self.path.match(logical))
        )


def hugo_glob(pattern: str) -> re.Pattern[str]:
    """A Hugo (gobwas) glob, matched on lower case as Hugo does: `*` and `?` stay inside one path
    segment, `**` spans any, `[a-z]` and `[!a-z]` are classes, `{a,b}` alternatives, `\\` escapes.
    (Notes' own globs, `paths.glob_regex`, are another dialect: there `**/` spans whole folders.)"""
    text, out, depth, i = pattern.lower(), [], 0, 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(re.escape(text[i + 1]))
            i += 1
        elif text.startswith("**", i):
            out.append(".*")
            i += 1
        elif c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = text.find("]", i + 2)
            if end < 0:
                raise ValueError(f"{pattern!r}: `[` is never closed")
            body = text[i + 1 : end]
            negated = body.startswith("!")
            chars = "".join(ch if ch == "-" else re.escape(ch) for ch in body[negated:])
            out.append(f"[{'^/' if negated else ''}{chars}]")
            i = end
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "," and depth:
            out.append("|")
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise ValueError(f"{pattern!r}: `{{` is never closed")
    return re.compile("".join(out) + r"\Z")


def _content_root(path: str) -> str:
    return CONTENT if path.startswith(f"{CONTENT}/") else ""


def logical_path(path: str) -> str:
    """A note's Hugo logical path, which `target.path` matches: below the content directory, a
    bundle by its folder, lower case, spaces as hyphens (`content/notes/Db/a b/index.md` ->
    `/notes/db/a-b`)."""
    p = PurePosixPath(path)
    root = _content_root(path)
    parts = p.parent.relative_to(root).parts if root else p.parent.parts
    parts = [part for part in parts if part != "."]
    if p.stem not in ("index", "_index"):
        parts.append(p.stem)
    return ("/" + "/".join(parts)).lower().replace(" ", "-")


def sections_above(path: str) -> list[str]:
    """The `_index.md` paths whose cascade can reach the note at `path`, the closest first."""
    root = _content_root(path)
    folder, out = PurePosixPath(path).parent, []
    while True:
        name = "" if str(folder) == "." else str(folder)
        out.append(f"{name}/{INDEX}" if name else INDEX)
        if name in (root, ""):
            return out
        folder = folder.parent


def index_entries(raw: str, where: str) -> list[Entry]:
    """The `cascade` entries of an `_index.md` (its text `raw`) that give `access`."""
    try:
        fields, _ = split_front_matter(raw)
    except FrontMatterError as exc:
        raise NotesSourceError(f"{where}: {exc}") from None
    own = {k: v for k, v in fields.items() if k != "cascade"}
    for key, value in own.items():
        folded = key.strip().lower() if isinstance(key, str) else ""
        if isinstance(value, (Mapping, list)) and edit_distance(folded, "cascade") <= NEAR:
            raise NotesSourceError(f"{where}: front matter key {key!r} is not read; write `cascade`")
    near_keys(own, "", where, read_at=("", "params"))
    value = fields.get("cascade")
    items = [] if value is None else [value] if isinstance(value, Mapping) else value
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise NotesSourceError(f"{where}: `cascade` must be a mapping or a list of mappings, got {value!r}")
    single = isinstance(value, Mapping)
    entries = [
        e
        for i, item in enumerate(items)
        if (e := _entry(item, "cascade" if single else f"cascade[{i}]", where))
    ]
    if gives_access(own) and not entries:
        raise NotesSourceError(
            f"{where}: `access` here restricts the section page only, which is no note (Hugo passes "
            "nothing down without `cascade`); to restrict the notes below it write "
            "`cascade: {params: {access: [...]}}`"
        )
    return entries


def _entry(item: Mapping[Any, Any], at: str, where: str) -> Entry | None:
    groups = access_groups(item, where, at)
    if not groups:
        return None
    for key in item:
        folded = str(key).lower()
        if folded in ("target", "_target", "params") and key != folded:
            raise NotesSourceError(f"{where}: `{at}.{key}` is not read; write `{folded}`")
        if folded in REFUSED:
            raise NotesSourceError(f"{where}: `{at}.{key}`: Hugo refuses `{folded}` in a cascade")
    if "target" in item and "_target" in item:
        raise NotesSourceError(f"{where}: `{at}` gives both `target` and `_target`; give `target` once")
    name = "target" if "target" in item else "_target"
    target = item.get(name) or {}
    if not isinstance(target, Mapping):
        raise NotesSourceError(f"{where}: `{at}.{name}` must be a mapping (path, kind), got {target!r}")
    globs: dict[str, re.Pattern[str]] = {}
    for key, pattern in target.items():
        folded, place = str(key).lower(), f"`{at}.{name}.{key}`"
        if folded in UNREAD_TARGETS:
            raise NotesSourceError(
                f"{where}: {place} is not read (it depends on how Hugo builds the site); a cascade "
                "that gives `access` may target pages by `path` and `kind` only"
            )
        if folded not in READ_TARGETS or folded in globs:
            raise NotesSourceError(
                f"{where}: {place} is not read; a target gives `path` and `kind` once each"
            )
        if not isinstance(pattern, str):
            raise NotesSourceError(f"{where}: {place} must be a glob, got {pattern!r}")
        try:
            globs[folded] = hugo_glob(pattern)
        except ValueError as exc:
            raise NotesSourceError(f"{where}: {place}: {exc}") from None
    if "kind" in globs and not any(globs["kind"].match(k) for k in PAGE_KINDS):
        raise NotesSourceError(f"{where}: `{at}.{name}.kind` matches no page kind ({', '.join(PAGE_KINDS)})")
    return Entry(groups, where, globs.get("path"), globs.get("kind"))


class Cascades:
    """The `access` cascades of the `_index.md` files above some notes, by `_index.md` path."""

    def __init__(self, entries: Mapping[str, Sequence[Entry] | NotesSourceError]):
        self.entries = entries  # an `_index.md` that cannot be read: its error

    def onto(self, path: str) -> Cascaded | None:
        """What the closest section whose cascade matches the note at `path` gives it, or None;
        the error of an `_index.md` above it that cannot be read."""
        logical = logical_path(path)
        for index in sections_above(path):
            entries = self.entries.get(index, ())
            if isinstance(entries, NotesSourceError):
                raise entries
            found = {e.groups: e for e in entries if e.applies(logical)}
            if len(found) > 1:
                named = " and ".join(str(list(g)) for g in sorted(found))
                raise NotesSourceError(
                    f"{next(iter(found.values())).where}: two `cascade` entries give {path} different "
                    f"groups ({named}); narrow their targets so that one matches"
                )
            if found:
                return Cascaded(next(iter(found)), index)
        return None
