"""Which chunking strategies to build: the built-ins and those of a TOML strategy file.

A strategy file holds `[[strategy]]` tables, each with a `name`, a `kind` and the kind's
parameters. Every strategy's version spells out its kind and parameters (for `python`, the
given `version` or a hash of the function's source) and the fingerprint of the code that makes its
chunks, so editing one entry makes only its lane stale.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the stdlib module arrived in 3.11
    import tomli as tomllib

from rag_pipeline.lib.chunking.chunkers import (
    STRATEGIES,
    Strategy,
    chunk_cleaned_note,
    fixed_strategy,
    recursive_strategy,
    section_split_strategy,
    section_strategy,
)
from rag_pipeline.lib.core.fingerprint import fingerprint

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")


class StrategyError(ValueError):
    """A strategy selection or file that cannot be built; the message names the variable or the
    file and the entry at fault."""


@dataclass
class _Entry:
    """One `[[strategy]]` table; its errors name the file and the entry."""

    where: str
    table: dict[str, Any]

    def fail(self, message: str) -> NoReturn:
        raise StrategyError(f"{self.where}: {message}")

    def integer(self, key: str, default: int | None = None, minimum: int = 0) -> int:
        value = self.table.get(key, default)
        if value is None:
            self.fail(f"missing parameter `{key}`")
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(f"parameter `{key}` must be an integer >= {minimum}, not {value!r}")
        return value

    def overlap(self, below: str, limit: int) -> int:
        overlap = self.integer("overlap", 0)
        if overlap >= limit:
            self.fail(f"parameter `overlap` ({overlap}) must be smaller than `{below}` ({limit})")
        return overlap

    def text(self, key: str, default: str | None = None) -> str:
        value = self.table.get(key, default)
        if value is None:
            self.fail(f"missing parameter `{key}`")
        if not isinstance(value, str) or not value.strip():
            self.fail(f"parameter `{key}` must be a non-empty string, not {value!r}")
        return value

    def flag(self, key: str) -> bool:
        value = self.table.get(key, False)
        if not isinstance(value, bool):
            self.fail(f"parameter `{key}` must be true or false, not {value!r}")
        return value


def _fixed(name: str, e: _Entry) -> Strategy:
    size = e.integer("size", minimum=1)
    return fixed_strategy(name, size, e.overlap("size", size))


def _section(name: str, e: _Entry) -> Strategy:
    max_level = e.integer("max_level", 3, minimum=1)
    if max_level > 6:
        e.fail(f"parameter `max_level` must be a heading level 1-6, not {max_level}")
    return section_strategy(name, max_level)


def _section_split(name: str, e: _Entry) -> Strategy:
    limit = e.integer("limit", minimum=1)
    return section_split_strategy(name, limit, e.overlap("limit", limit))


def _recursive(name: str, e: _Entry) -> Strategy:
    size = e.integer("size", minimum=1)
    return recursive_strategy(name, size, e.overlap("size", size))


def _python(name: str, e: _Entry) -> Strategy:
    target = e.text("callable")
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        e.fail(f"parameter `callable` must look like `package.module:function`, not {target!r}")
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as err:
        e.fail(f"cannot import module {module_name!r} of `callable` {target!r}: {err!r}")
    try:
        for part in attribute.split("."):
            found = getattr(found, part)
    except AttributeError:
        e.fail(f"module {module_name!r} has no {attribute!r} (parameter `callable` {target!r})")
    if not callable(found):
        e.fail(f"`callable` {target!r} is not callable but a {type(found).__name__}")
    version = e.text("version") if "version" in e.table else None
    if version is None:
        try:
            source = inspect.getsource(found)
        except (OSError, TypeError) as err:
            e.fail(f"cannot read the source of `callable` {target!r} ({err}); give a `version` instead")
        version = "src-" + hashlib.sha256(source.encode()).hexdigest()[:12]
    rows = fingerprint([chunk_cleaned_note])  # the code that makes rows of its spans
    return Strategy(name, f"python:callable={target},version={version}@{rows}", found, e.flag("overlapping"))


KINDS: dict[str, tuple[tuple[str, ...], Callable[[str, _Entry], Strategy]]] = {
    "fixed": (("size", "overlap"), _fixed),
    "section": (("max_level",), _section),
    "section-split": (("limit", "overlap"), _section_split),
    "recursive": (("size", "overlap"), _recursive),
    "python": (("callable", "version", "overlapping"), _python),
}


def _strategy(e: _Entry, taken: dict[str, str]) -> Strategy:
    name = e.table.get("name")
    if name is None:
        e.fail("missing `name`")
    if not isinstance(name, str) or not _NAME.match(name):
        e.fail(f"bad name {name!r}: use lowercase letters, digits and single '-' between them")
    if name in STRATEGIES:
        e.fail(f"name {name!r} is taken by a built-in strategy ({', '.join(STRATEGIES)})")
    if name in taken:
        e.fail(f"duplicate name {name!r}, already used by {taken[name]}")
    kind = e.table.get("kind")
    if kind not in KINDS:
        e.fail(
            f"{'missing `kind`' if kind is None else f'unknown kind {kind!r}'}; known kinds: {', '.join(KINDS)}"
        )
    params, build = KINDS[kind]
    unknown = sorted(set(e.table) - {"name", "kind", *params})
    if unknown:
        e.fail(
            f"unknown parameter(s) {', '.join(unknown)} for kind {kind!r}; its parameters: {', '.join(params)}"
        )
    return build(name, e)


def strategy_from_table(table: dict[str, Any], where: str) -> Strategy:
    """One `[[strategy]]` table (name, kind, parameters) as a strategy; an error names `where`."""
    return _strategy(_Entry(where, table), {})


def read_toml(path: str | Path, what: str, error: type[ValueError] = StrategyError) -> dict[str, Any]:
    """The TOML file at `path`, a `what` (e.g. `strategy file`); `error` naming it when unreadable."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise error(f"{path}: cannot read the {what}: {err.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise error(f"{path}: invalid TOML: {err}") from None


def read_strategy_file(path: str | Path) -> list[Strategy]:
    """The strategies of a TOML strategy file, in file order."""
    data = read_toml(path, "strategy file")
    entries = data.get("strategy")
    extra = sorted(set(data) - {"strategy"})
    if extra or not isinstance(entries, list) or not entries or not all(isinstance(t, dict) for t in entries):
        raise StrategyError(
            f"{path}: a strategy file holds one or more [[strategy]] tables and nothing else"
            + (f" (found top-level {', '.join(extra)})" if extra else "")
        )
    strategies: list[Strategy] = []
    taken: dict[str, str] = {}
    for i, table in enumerate(entries, start=1):
        label = f"[[strategy]] #{i}" + (f" {table['name']!r}" if isinstance(table.get("name"), str) else "")
        strategy = _strategy(_Entry(f"{path}: {label}", table), taken)
        taken[strategy.name] = label
        strategies.append(strategy)
    return strategies


def load_strategies(selected: str | None, strategy_file: str | None) -> list[Strategy]:
    """The strategies to build: those named in `selected` (comma-separated, as in RAG_STRATEGIES), in
    that order, else every built-in one followed by every one of `strategy_file` (RAG_STRATEGY_FILE)."""
    from_file = read_strategy_file(strategy_file) if strategy_file else []
    known = dict(STRATEGIES) | {s.name: s for s in from_file}
    if not selected:
        return list(known.values())
    names = list(dict.fromkeys(n.strip() for n in selected.split(",") if n.strip()))
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        problem = f"unknown strategy {', '.join(map(repr, unknown))}" if unknown else "names no strategy"
        origin = f" (built-in, then from {strategy_file})" if strategy_file else " (built-in)"
        raise StrategyError(f"RAG_STRATEGIES: {problem}; known strategies{origin}: {', '.join(known)}")
    return [known[n] for n in names]
