"""What code computes, as a digest: the part of a cache key or of an asset's code version that names
the code behind a value. cocoindex's logic fingerprint (`_compute_logic_fingerprint(fn, version=,
deps=)`), followed from source, since a code version is needed before anything runs:

- **Logic is declared.** Every function and class of `rag_pipeline.lib` is logic (the layer of plain
  functions), and so is what is marked `@logic` elsewhere (a defs helper that shapes an output, a
  resource that hands out a model). A fingerprint reads its roots and the logic they reach; the rest
  of the project (Dagster glue, the settings table, the commands), code outside it (numpy) and
  this code, which names code, are named, not read: a setting enters an asset's version through
  the settings the asset reads (`stage_asset(config=)`), never through the table's code or help text.
- **Read as source, followed by name.** A function or class is its syntax tree (docstrings,
  comments, formatting and a function's decorators left out: `pysource.py`). Each name it uses is
  followed: to the function or class it stands for (a method behind `@property`, `@classmethod` or
  `@staticmethod` is in its class's tree; an annotation written as a string is parsed), through a
  module to the attribute it names, or else to the statements that bind it in its module (a
  constant, a pattern, a table of functions, an import). Nothing is read from a value made as the
  process runs, so a fingerprint is the same in every process and on every machine.
- **Two knobs.** A value the code depends on enters through `deps=`; `version=` gives a new
  fingerprint where the code did not change (`@logic(version=...)` for one function or class).
- **Once per code state** (`codestate.py`): kept by the digest of the packages' source files, so
  a process of a run, each step process among them, looks fingerprints up instead of computing them.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import inspect
import json
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rag_pipeline.lib.core import codestate, pysource
from rag_pipeline.lib.core.codestate import KEPT, PACKAGE_ROOT, code_state, package_fingerprint
from rag_pipeline.lib.core.pysource import Source, digest, names

PROJECT = "rag_pipeline"  # the package whose code is read
LOGIC = ("rag_pipeline.lib.",)  # the modules whose every function and class is logic
# the code that names code is no logic of what it names: `CLEANER_VERSION = f"clean@{fingerprint(
# [cleaned_rows])}"` is read as cleaned_rows, and a change of how fingerprints are kept changes no
# version (a change of how they are computed changes every one anyway)
NAMING = (__name__, pysource.__name__, codestate.__name__)
__all__ = ["PACKAGE_ROOT", "code_of", "fingerprint", "logic", "package_fingerprint"]


@dataclass(frozen=True)
class Logic:
    version: object = None
    deps: tuple = ()


def logic(obj: object = None, *, version: object = None, deps: Iterable[object] = ()) -> object:
    """Mark a function or class as logic, so a fingerprint that reaches it reads it (lib/'s code is
    logic unmarked). `version` is added to its fingerprint (change it to force a rebuild where no
    code changed); `deps` are values its output depends on."""

    def mark(target: object) -> object:
        target.__logic__ = Logic(version, tuple(deps))
        return target

    return mark if obj is None else mark(obj)


def fingerprint(objects: Iterable[object], *, version: object = None, deps: Iterable[object] = ()) -> str:
    """The digest of the functions and classes `objects` and of the logic they reach, with
    `version` and the values `deps`; looked up by code state first."""
    roots = [root(o) for o in objects]
    more: list[object] = []
    values = [expand(d, more) for d in deps]
    key = json.dumps([sorted(where(r) for r in roots), repr(version), values])
    state = code_state({PROJECT, *(o.__module__.split(".")[0] for o in [*roots, *more])})
    found = KEPT.get(state, key)
    if found is None:
        ids = sorted(GRAPH.visit(r) for r in [*roots, *more])
        read = json.dumps([ids, repr(version), values, sorted(GRAPH.reach(ids).items())])
        found = KEPT.put(state, key, hashlib.sha256(read.encode()).hexdigest()[:16])
    return found


def code_of(obj: object) -> str:
    """A short fingerprint of the class of `obj`: the code that computes what it makes."""
    return fingerprint([type(obj)])[:12]


def root(obj: object) -> object:
    """The function or class `obj` stands for (a cached function's, a method's, a property's)."""
    for attribute in ("__wrapped__", "__func__", "fget"):
        while hasattr(obj, attribute) and not inspect.isclass(obj):
            obj = getattr(obj, attribute)
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        raise TypeError(
            f"a fingerprint reads functions and classes, not {type(obj).__name__}: a value is a dep"
        )
    return obj


def where(obj: object) -> str:
    """A root's place, to look its fingerprint up by (the first line tells apart two functions of
    one name; a line moved by an edit is another code state anyway)."""
    code = getattr(obj, "__code__", None)
    return f"{obj.__module__}.{obj.__qualname__}" + (f":{code.co_firstlineno}" if code else "")


def expand(value: object, more: list[object]) -> str:
    """A value of `deps=` as text: plain values, containers, dataclasses and partials by what they
    hold; a function or class by its name (added to `more`, to be read)."""
    if value is None or isinstance(value, (str, bytes, bool, int, float)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return f"[{', '.join(expand(v, more) for v in value)}]"
    if isinstance(value, (set, frozenset)):
        return f"{{{', '.join(sorted(expand(v, more) for v in value))}}}"
    if isinstance(value, dict):
        return f"{{{', '.join(sorted(f'{k!r}: {expand(v, more)}' for k, v in value.items()))}}}"
    if isinstance(value, functools.partial):
        keywords = {k: expand(v, more) for k, v in value.keywords.items()}
        return f"partial({expand(value.func, more)}, {expand(value.args, more)}, {keywords})"
    if inspect.isfunction(value) or inspect.isclass(value):
        more.append(value)
        return f"{value.__module__}.{value.__qualname__}"
    if dataclasses.is_dataclass(value):
        fields = [f"{f.name}={expand(getattr(value, f.name), more)}" for f in dataclasses.fields(value)]
        return f"{expand(type(value), more)}({', '.join(fields)})"
    raise TypeError(f"deps= takes plain values, containers, dataclasses and code, not {type(value).__name__}")


class Graph:
    """The logic read so far in this process: each node (a function, a class, the binding of a name
    in a module) by its id, as the digest of its own syntax tree and what each name in it stands
    for, and the nodes it refers to. Read once: one node is in many fingerprints."""

    def __init__(self) -> None:
        self.records: dict[str, str] = {}
        self.refers: dict[str, set[str]] = {}
        self.unread: list[Callable[[], None]] = []  # nodes named, to be read (no recursion, however deep)

    def reach(self, ids: Iterable[str]) -> dict[str, str]:
        """The records of the nodes `ids` and of every node they refer to, transitively."""
        while self.unread:
            self.unread.pop()()
        found: dict[str, str] = {}
        todo = list(ids)
        while todo:
            node = todo.pop()
            if node not in found:
                found[node] = self.records[node]
                todo += self.refers[node]
        return found

    def visit(self, obj: object) -> str:
        """The id of a function or class, read once (`reach` reads what is named)."""
        source = Source.of_object(obj)
        node = f"{obj.__module__}.{obj.__qualname__}"
        if "<lambda>" in node:  # the lambdas of one scope share a name
            node += f"#{digest(source.tree_of(obj))[:12]}"
        held = {name: self.visit(v) for name, v in closure(obj).items() if readable(v)}
        if held:  # a function made by a call, with the code it closes over
            node += f"#{hashlib.sha256(json.dumps(held, sort_keys=True).encode()).hexdigest()[:12]}"
        if node not in self.records:
            self.records[node] = ""
            self.unread.append(lambda: self.read(node, source.tree_of(obj), source, marks(obj), held))
        return node

    def binding(self, source: Source, name: str) -> str:
        """The id of the statements that bind `name` in a module (following an import from the
        project to the module that binds it), read once."""
        for statement in source.bindings.get(name, []):
            imported = source.imported(statement, name)
            if imported is not None and in_project(imported[0]):
                return self.binding(Source.of_module(sys.modules[imported[0]]), imported[1])
        node = f"{source.module}:{name}"
        if node not in self.records:
            self.records[node] = ""
            self.unread.append(lambda: self.read(node, source.bindings.get(name, []), source, None, {}))
        return node

    def read(self, node: str, tree: pysource.Tree, source: Source, mark: Logic | None, held: dict) -> None:
        self.refers[node] = set()
        refs = {}
        for chain in sorted(names(tree)):
            found = self.resolve(chain, source, held)
            if found is not None:
                refs[".".join(chain)] = found[0]
                self.refers[node] |= {found[0]} if found[1] else set()
        more: list[object] = []
        knobs = [repr(mark.version), [expand(d, more) for d in mark.deps]] if mark else []
        self.refers[node] |= {self.visit(m) for m in more}
        self.records[node] = f"{digest(tree)}|{json.dumps(knobs)}|{json.dumps(refs, sort_keys=True)}"

    def resolve(
        self, chain: tuple[str, ...], source: Source, held: dict[str, str]
    ) -> tuple[str, bool] | None:
        """What a name (with the attributes named of it) stands for: a node (True) or a name (False);
        None for no name of the module (a builtin, a local)."""
        name, *attributes = chain
        if name in held:  # the code a closure holds (a value it holds enters only through deps=)
            return held[name], True
        if name not in source.namespace:  # a builtin, a local; or bound later in a module loading
            return self.unbound(source, name)
        value, home = source.namespace[name], source
        while isinstance(value, types.ModuleType) and in_project(value.__name__) and attributes:
            if not hasattr(value, attributes[0]):
                break
            home, name, value = Source.of_module(value), attributes[0], getattr(value, attributes[0])
            attributes = attributes[1:]
        if isinstance(value, types.ModuleType):
            return f"module {value.__name__}", False
        value = getattr(value, "__wrapped__", value)
        if (inspect.isclass(value) or inspect.isfunction(value)) and ours(value) and not made(value):
            return (
                (self.visit(value), True)
                if readable(value)
                else (f"{value.__module__}.{value.__qualname__}", False)
            )
        return self.binding(home, name), True  # a value, or code outside the project: as it is bound

    def unbound(self, source: Source, name: str) -> str | None:
        """A name the module binds but has not bound yet (a fingerprint computed as it loads): a
        value is read as it is bound; code read before its definition would be read otherwise
        once loaded, so that is an error."""
        statements = source.bindings.get(name, [])
        if not statements:
            return None
        if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for s in statements):
            raise TypeError(f"{source.module}.{name} is read before it is defined: fingerprint it later")
        return self.binding(source, name), True


GRAPH = Graph()


def marks(obj: object) -> Logic | None:
    return vars(obj).get("__logic__")


def made(value: object) -> bool:
    """A lambda or a function made by a call: read where a name is bound to it, not alone."""
    return inspect.isfunction(value) and (
        "<lambda>" in value.__qualname__ or "<locals>" in value.__qualname__
    )


def in_project(module: str) -> bool:
    return module == PROJECT or module.startswith(PROJECT + ".")


def ours(obj: object) -> bool:
    return in_project(getattr(obj, "__module__", None) or "")


def readable(obj: object) -> bool:
    """Whether a fingerprint reads `obj`: logic of the project (lib/, or marked), not this code."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not ours(obj) or obj.__module__ in NAMING:
        return False
    return obj.__module__.startswith(LOGIC) or "__logic__" in vars(obj)


def closure(obj: object) -> dict[str, object]:
    cells = zip(
        getattr(getattr(obj, "__code__", None), "co_freevars", ()), getattr(obj, "__closure__", None) or ()
    )
    found = {}
    for name, cell in cells:
        try:
            found[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return found


def forget() -> None:
    """Forget what this process read and computed (a test that rewrites a package's files)."""
    pysource.forget()
    codestate.forget()
    GRAPH.__init__()
