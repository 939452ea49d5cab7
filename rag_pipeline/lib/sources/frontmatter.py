"""Front matter as Hugo reads it: YAML between `---` lines, TOML between `+++` lines or a JSON
object, after any blank lines, parsed by maintained parsers.

Whatever Hugo would take for front matter is read as front matter or is an error, never note text:
a fence that is never closed, a header that does not parse, a key given twice (Hugo's parsers refuse
it; PyYAML and `json` would keep the last one silently), Org-mode `#+` lines (not read here)."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_FENCES = {"---": re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.M), "+++": re.compile(r"^\+\+\+[ \t]*$", re.M)}
_KINDS = {"---": "YAML", "+++": "TOML"}
_OPENERS = ("---", "+++", "{", "#+")  # what opens front matter in Hugo


class FrontMatterError(ValueError):
    """The front matter is unclosed or does not parse; the message holds the parser's own words."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` may be overridden by the mapping's own keys
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
            except TypeError:
                pass  # an unhashable key: the base loader says so
        return super().construct_mapping(node, deep)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in pairs:
        if key in fields:
            raise FrontMatterError(f"invalid JSON front matter: duplicate key {key!r}")
        fields[key] = value
    return fields


_JSON = json.JSONDecoder(object_pairs_hook=_unique_pairs)


def normalize(raw: str) -> str:
    """Drop a byte-order mark and turn CRLF and CR line ends into LF."""
    return raw.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def split_front_matter(raw: str) -> tuple[dict[str, Any], str]:
    """(fields, body) of a note; a note without front matter has no fields and its whole text."""
    text = normalize(raw)
    start = len(text) - len(text.lstrip())  # Hugo skips blank lines before the front matter
    line = text.count("\n", 0, start) + 1
    first = text[start:].partition("\n")[0].rstrip()
    if first in _FENCES:
        fields, body = _fenced(text[start + len(first) :].partition("\n")[2], first, line)
    elif first[:3] in _FENCES:
        raise FrontMatterError(
            f"line {line}: {first[:20]!r} opens front matter in Hugo; write the fence {first[:3]!r} alone on its line"
        )
    elif first.startswith("{"):
        fields, body = _json(text, start, line)
    elif first.startswith("<!--") and text[start:].partition("\n")[2].lstrip().startswith(_OPENERS):
        # Hugo reads front matter that follows an HTML comment's opening line (commented-out front
        # matter stays front matter there); read as text here, it would leave the note public
        raise FrontMatterError(
            f"line {line}: front matter inside an HTML comment (`<!--`) is read by Hugo but not here; "
            "take it out of the comment"
        )
    elif first.startswith("#+"):
        raise FrontMatterError(
            f"line {line}: Org-mode front matter (`#+`) is not read; write YAML (---), TOML (+++) or JSON ({{...}})"
        )
    else:
        return {}, text
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        raise FrontMatterError(f"front matter must be a mapping of fields, got {type(fields).__name__}")
    return fields, body


def _fenced(rest: str, fence: str, line: int) -> tuple[Any, str]:
    end = _FENCES[fence].search(rest)
    if end is None:
        raise FrontMatterError(f"front matter opened with {fence!r} on line {line} is never closed")
    header, body = rest[: end.start()], rest[end.end() :].removeprefix("\n")
    try:
        fields = yaml.load(header, _UniqueKeyLoader) if fence == "---" else tomllib.loads(header)
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        raise FrontMatterError(
            f"invalid {_KINDS[fence]} front matter: {' '.join(str(exc).split())}"
        ) from None
    return fields, body


def _json(text: str, start: int, line: int) -> tuple[Any, str]:
    try:
        fields, end = _JSON.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise FrontMatterError(
            f"invalid JSON front matter: {exc.msg} at line {exc.lineno} column {exc.colno} "
            f"(a `{{` first on line {line} opens JSON front matter, as in Hugo)"
        ) from None
    return fields, text[end:].removeprefix("\n")


def title_of(fields: dict[str, Any], slug: str) -> str:
    """A note's title: its front matter's `title`, else its slug."""
    return str(fields.get("title") or slug)


def note_title(raw: str, slug: str) -> str:
    return title_of(split_front_matter(raw)[0], slug)
