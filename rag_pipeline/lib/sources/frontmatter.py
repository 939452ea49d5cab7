"""Front matter: YAML between `---` lines or TOML between `+++` lines (as Hugo allows), parsed by
maintained parsers. Unclosed or invalid front matter is an error, never note text."""

from __future__ import annotations

import re
import sys
from typing import Any

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_FENCES = {"---": re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.M), "+++": re.compile(r"^\+\+\+[ \t]*$", re.M)}


class FrontMatterError(ValueError):
    """The front matter is unclosed or does not parse; the message holds the parser's own words."""


def normalize(raw: str) -> str:
    """Drop a byte-order mark and turn CRLF and CR line ends into LF."""
    return raw.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def split_front_matter(raw: str) -> tuple[dict[str, Any], str]:
    """(fields, body) of a note; a note without front matter has no fields."""
    text = normalize(raw)
    first, _, rest = text.partition("\n")
    fence = first.rstrip()
    if fence not in _FENCES:
        return {}, text
    end = _FENCES[fence].search(rest)
    if end is None:
        raise FrontMatterError(f"front matter opened with {fence!r} on line 1 is never closed")
    header, body = rest[: end.start()], rest[end.end() :].removeprefix("\n")
    try:
        fields = yaml.safe_load(header) if fence == "---" else tomllib.loads(header)
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        kind = "YAML" if fence == "---" else "TOML"
        raise FrontMatterError(f"invalid {kind} front matter: {' '.join(str(exc).split())}") from None
    if fields is None:
        fields = {}
    if not isinstance(fields, dict):
        raise FrontMatterError(f"front matter must be a mapping of fields, got {type(fields).__name__}")
    return fields, body


def title_of(fields: dict[str, Any], slug: str) -> str:
    """A note's title: its front matter's `title`, else its slug."""
    return str(fields.get("title") or slug)


def note_title(raw: str, slug: str) -> str:
    return title_of(split_front_matter(raw)[0], slug)
