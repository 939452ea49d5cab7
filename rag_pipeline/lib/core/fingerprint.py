"""What a function does, as a digest: its canonical syntax tree (docstrings, comments, decorators and
formatting left out) and, followed from there, those of every function, class and constant of the
project it refers to (by a global name, a module's attribute, a closure, a parameter's annotation, a
partial or a table of functions). An asset's code version is the fingerprint of its body, so a change
to what it runs re-runs it and what follows, and a comment or a docstring changes nothing. Code
outside the project (numpy, pandas) is named, not read: an upgrade of a library is not seen."""

from __future__ import annotations

import ast
import atexit
import dataclasses
import datetime
import functools
import hashlib
import inspect
import json
import logging
import os
import re
import sys
import tempfile
import textwrap
import types
from collections.abc import Callable, Iterable
from pathlib import Path

PROJECT = "rag_pipeline."
CHECKOUT = str(Path(__file__).resolve().parents[3])  # the folder that holds rag_pipeline/
PLAIN = (str, int, float, bool, bytes, type(None))
# values of the standard library that hold no state and read the same in every process
STEADY = (re.Pattern, datetime.timedelta, datetime.timezone)


def canonical(source: str) -> str:
    """The syntax tree of `source` without docstrings, positions or the top definition's decorators."""
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):  # a string standing as a statement (a docstring) does nothing
            node.body = [s for s in body if not _text(s)] or [ast.Pass()]
    top = tree.body[0] if tree.body else None
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        top.decorator_list = []
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def source_text(obj: object) -> str:
    """The digest of the canonical syntax tree of a function or class; for a lambda (whose source is
    the line it stands in, not a statement), of its bytecode, names and constants (line numbers are
    not in them). Kept per source file while the file is unchanged (`SOURCES`)."""
    code = getattr(obj, "__code__", None)
    if code is not None and code.co_name == "<lambda>":
        return hashlib.sha256(bytecode(code).encode()).hexdigest()
    path = code.co_filename if code is not None else sys.modules[obj.__module__].__file__
    key = f"{obj.__qualname__}:{code.co_firstlineno}" if code is not None else f"class {obj.__qualname__}"
    return SOURCES.digest(path, key, lambda: canonical(inspect.getsource(obj)))


class SourceDigests:
    """The digests of the project's functions and classes, by file and (name, line), in a JSON file
    under the user's cache directory: reading and parsing every function an asset runs took seconds
    of each process that loads the definitions. A file whose size or modification time changed is
    read again; the cache is written once, when the process ends."""

    def __init__(self, path: Path):
        self.path, self.files, self.changed = path, None, False

    def digest(self, source: str, key: str, text: Callable[[], str]) -> str:
        if self.files is None:
            self.files = self.load()
            atexit.register(self.save)
        stat = os.stat(source)
        stamp = [stat.st_mtime_ns, stat.st_size]
        entry = self.files.get(source)
        if entry is None or entry["stamp"] != stamp:
            entry = self.files[source] = {"stamp": stamp, "digests": {}}
        if key not in entry["digests"]:
            entry["digests"][key] = hashlib.sha256(text().encode()).hexdigest()
            self.changed = True
        return entry["digests"][key]

    def load(self) -> dict:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def save(self) -> None:
        if not self.changed:
            return
        try:  # beside it, then renamed over it: a reader sees the old cache or the new, never half
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".fingerprints.")
            with os.fdopen(fd, "w") as out:
                json.dump(self.files, out)
            os.replace(tmp, self.path)
        except OSError:  # a cache: without it the next process reads the sources again
            pass


SOURCES = SourceDigests(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "rag-pipeline"
    / f"fingerprints-py{sys.version_info[0]}{sys.version_info[1]}.json"
)


def bytecode(code: types.CodeType) -> str:
    consts = [bytecode(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return f"{code.co_code.hex()}|{code.co_names}|{code.co_varnames}|{consts}"


def _text(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def ours(obj: object) -> bool:
    """Whether `obj` is the project's own, written in its source (not a method a dataclass made)."""
    code = getattr(obj, "__code__", None)
    if code is not None and code.co_filename.startswith("<"):
        return False
    return str(getattr(obj, "__module__", None) or "").startswith(PROJECT)


def names_used(code: types.CodeType) -> set[str]:
    """Every global or attribute name a code object and the code nested in it use."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= names_used(const)
    return found


def referred(fn: types.FunctionType) -> list[object]:
    """What the project function `fn` refers to: its globals by name (of a module of the project,
    the attributes it names), its closure's values and its parameters' annotations."""
    used = names_used(fn.__code__)
    named = [(n, fn.__globals__[n]) for n in used if n in fn.__globals__]
    for module in [v for _, v in named if isinstance(v, types.ModuleType) and v.__name__.startswith(PROJECT)]:
        named += [(n, getattr(module, n)) for n in used if hasattr(module, n)]
    found = [code(value) for name, value in named if wanted(name, code(value))]
    found += [cell.cell_contents for cell in fn.__closure__ or () if _filled(cell)]
    found += [a for a in fn.__annotations__.values() if inspect.isclass(a)]
    return found


def code(value: object) -> object:
    """A cached function's function (`functools.cache` wraps it)."""
    return getattr(value, "__wrapped__", value)


def wanted(name: str, value: object) -> bool:
    """Whether a global is part of the logic: not a module (followed by its attributes) and not a
    module's private state, such as a cache filled as the process runs; a private value that cannot
    change (`_FENCE`, a pattern) is logic."""
    if isinstance(value, types.ModuleType) or name.startswith("__"):  # `__file__` names no logic
        return False
    return callable(value) or not name.startswith("_") or constant(value)


def constant(value: object) -> bool:
    """Whether `value` cannot change as the process runs: a plain value, a pattern, a duration, or a
    tuple or frozenset of them."""
    if isinstance(value, (*PLAIN, *STEADY)):
        return True
    return isinstance(value, (tuple, frozenset)) and all(constant(v) for v in value)


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def identity(obj: object) -> str:
    """A function's or class's name in a fingerprint; a lambda's with its code's digest: the lambdas of
    one module share a name, and which of them a shared name stood for followed the order of a set."""
    name = f"{obj.__module__}.{obj.__qualname__}"
    code = getattr(obj, "__code__", None)
    return f"{name}#{source_text(obj)[:16]}" if code is not None and code.co_name == "<lambda>" else name


def expand(value: object, named: list[object], depth: int = 0) -> str:
    """The text of a value in a fingerprint: a plain value's repr; a function or class of the project
    by its name (added to `named`, to be read in turn); a partial, container or dataclass of the
    project by what it holds; anything else by its type's name."""
    if depth > 20:
        return "..."
    if isinstance(value, str):  # a path in the checkout (a setting's default) names no place
        return repr(value.replace(CHECKOUT, "<checkout>"))
    if isinstance(value, PLAIN):
        return repr(value)
    if (inspect.isfunction(value) or inspect.isclass(value)) and ours(value):
        named.append(value)
        return identity(value)
    if isinstance(value, functools.partial):
        args = [expand(a, named, depth + 1) for a in value.args]
        keywords = sorted(f"{k}={expand(v, named, depth + 1)}" for k, v in value.keywords.items())
        return f"partial({expand(value.func, named, depth + 1)}, {args}, {keywords})"
    if isinstance(value, (tuple, list)):
        return f"[{', '.join(expand(v, named, depth + 1) for v in value)}]"
    if isinstance(value, (set, frozenset)):
        return f"{{{', '.join(sorted(expand(v, named, depth + 1) for v in value))}}}"
    if isinstance(value, dict):
        items = sorted(f"{k!r}: {expand(v, named, depth + 1)}" for k, v in value.items())
        return f"{{{', '.join(items)}}}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and ours(type(value)):
        fields = [
            f"{f.name}={expand(getattr(value, f.name), named, depth + 1)}" for f in dataclasses.fields(value)
        ]
        return f"{expand(type(value), named, depth + 1)}({', '.join(fields)})"
    if isinstance(value, types.ModuleType):
        return value.__name__
    return foreign(value)


def foreign(value: object) -> str:
    """A library's function, class or value in a fingerprint: a value by what it holds where that is
    the same in every process and on every machine (a pattern, a duration, a pyarrow schema or type),
    a logger by its name (its class follows what the process imported: Dagster's code server and
    daemon set structlog's, so a logger named by its type gave them other code versions than `make
    run`), anything else by its type's name (a path's value would name the checkout's place)."""
    if isinstance(value, logging.Logger):
        return f"logging.Logger({value.name!r})"
    if isinstance(value, re.Pattern):
        return f"re.compile({value.pattern!r}, {int(value.flags)})"
    if isinstance(value, STEADY) or type(value).__module__ == "pyarrow.lib":
        return repr(value)
    kind = value if inspect.isclass(value) or callable(value) else type(value)
    return f"{getattr(kind, '__module__', '')}.{getattr(kind, '__qualname__', repr(kind))}"


def fingerprint(objects: Iterable[object]) -> str:
    """The digest of `objects` and all of the project's code they refer to, followed transitively."""
    todo: list[object] = []
    roots = sorted(expand(o, todo) for o in objects)
    seen: dict[str, str] = {}
    while todo:
        obj = todo.pop()
        key = identity(obj)
        if key in seen:
            continue
        if inspect.isclass(obj):
            refs = [r for m in vars(obj).values() if inspect.isfunction(m) and ours(m) for r in referred(m)]
            refs += [b for b in obj.__bases__ if ours(b)]
        else:
            refs = referred(obj)
        values = sorted(expand(r, todo) for r in refs)
        seen[key] = f"{source_text(obj)}\x1d{values}"
    digest = hashlib.sha256(f"{roots}\x1e".encode())
    for key in sorted(seen):
        digest.update(f"{key}\x1f{seen[key]}\x1e".encode())
    return digest.hexdigest()[:16]


PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # rag_pipeline/


@functools.cache
def package_fingerprint(root: Path = PACKAGE_ROOT) -> str:
    """The digest of every source file of the package at `root` (this one: `rag_pipeline/`), by
    path within it and bytes: which code a process runs, the same on every machine with the same
    checkout wherever it lies."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(f"{path.relative_to(root).as_posix()}\x1f".encode())
        digest.update(path.read_bytes() + b"\x1e")
    return digest.hexdigest()[:16]
