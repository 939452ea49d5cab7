"""A Python module's source as a fingerprint reads it: its syntax tree without docstrings, each
function and class in it, and the statements that bind each of its names."""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import sys
import types
from pathlib import Path

Tree = ast.AST | list[ast.AST]


class Source:
    """One module's source without docstrings, parsed once per module object (a module imported
    again is read again)."""

    def __init__(self, module: types.ModuleType, path: str):
        self.module, self.namespace = module.__name__, vars(module)
        tree = ast.parse(Path(path).read_text())
        self.functions: dict[int, ast.AST] = {}  # by first line (a decorated one's first decorator's)
        self.lambdas: dict[int, list[ast.Lambda]] = {}
        self.classes: dict[str, ast.ClassDef] = {}  # by qualified name, as `inspect` finds them
        for node in ast.walk(tree):
            if isinstance(getattr(node, "body", None), list):  # a string as a statement does nothing
                node.body = [s for s in node.body if not said(s)] or [ast.Pass()]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(min([node.lineno, *(d.lineno for d in node.decorator_list)]), node)
            elif isinstance(node, ast.Lambda):
                self.lambdas.setdefault(node.lineno, []).append(node)
        self.index_classes(tree, "")
        self.bindings: dict[str, list[ast.stmt]] = {}
        for statement in tree.body:
            for name in bound(statement):
                self.bindings.setdefault(name, []).append(statement)

    @classmethod
    def of_module(cls, module: types.ModuleType) -> Source:
        path = getattr(module, "__file__", None) or ""
        if not path.endswith(".py"):
            raise TypeError(f"{module.__name__}: no source to read")
        return _source(module.__name__, path, id(vars(module)))

    @classmethod
    def of_object(cls, obj: object) -> Source:
        return cls.of_module(sys.modules[obj.__module__])

    def index_classes(self, node: ast.AST, prefix: str) -> None:
        if isinstance(node, ast.ClassDef):
            self.classes.setdefault(prefix + node.name, node)
            prefix = f"{prefix}{node.name}."
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            prefix = f"{prefix}{node.name}.<locals>."
        for child in ast.iter_child_nodes(node):
            self.index_classes(child, prefix)

    def tree_of(self, obj: object) -> Tree:
        """A class's tree, a function's without its decorators, or the lambdas of a lambda's line."""
        if inspect.isclass(obj):
            found = self.classes.get(obj.__qualname__)
        elif obj.__code__.co_name == "<lambda>":
            found = self.lambdas.get(obj.__code__.co_firstlineno)
        else:
            found = self.functions.get(obj.__code__.co_firstlineno)
            found = found and undecorated(found)
        if not found:
            raise TypeError(f"{obj.__module__}.{obj.__qualname__}: no source to read")
        return found

    def imported(self, statement: ast.stmt, name: str) -> tuple[str, str] | None:
        """(module, its name for it) when `statement` imports the value `name` from a module."""
        if not isinstance(statement, ast.ImportFrom):
            return None
        base = statement.module or ""
        if statement.level:
            package = self.module if "__path__" in self.namespace else self.module.rpartition(".")[0]
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - statement.level + 1] + ([base] if base else []))
        module = sys.modules.get(base)
        for alias in statement.names:
            value = getattr(module, alias.name, None)
            if (alias.asname or alias.name) == name and module and not isinstance(value, types.ModuleType):
                return base, alias.name
        return None


@functools.cache
def _source(module: str, path: str, namespace: int) -> Source:
    return Source(sys.modules[module], path)


def forget() -> None:
    _source.cache_clear()


def digest(tree: Tree) -> str:
    nodes = tree if isinstance(tree, list) else [tree]
    return hashlib.sha256("\n".join(ast.dump(n) for n in nodes).encode()).hexdigest()


def names(tree: Tree) -> set[tuple[str, ...]]:
    """Each name a tree uses, with the attributes it names of it (`lanes.lane_path` is one), and the
    names in annotations written as strings."""
    found: set[tuple[str, ...]] = set()
    for node in [n for t in (tree if isinstance(tree, list) else [tree]) for n in ast.walk(t)]:
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain, inner = [inner.attr, *chain], inner.value
            if isinstance(inner, ast.Name):
                found.add((inner.id, *chain))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.add((node.id,))
        for text in annotations(node):
            found |= names(parsed(text))
    return found


def annotations(node: ast.AST) -> list[str]:
    """The annotations written as strings on a node (a parameter's, a return's, a variable's)."""
    if not isinstance(node, (ast.arg, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    held = [getattr(node, "annotation", None), getattr(node, "returns", None)]
    return [s.value for a in held if a for s in ast.walk(a) if isinstance(getattr(s, "value", None), str)]


def parsed(text: str) -> ast.AST:
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError:  # a string in an annotation that is no expression (a Literal's value)
        return ast.Constant(None)


def undecorated(node: ast.AST) -> ast.AST:
    copy = type(node)(**{f: getattr(node, f) for f in node._fields})
    copy.decorator_list = []
    return copy


def said(statement: ast.stmt) -> bool:
    """A string standing as a statement: a docstring, or words of the same kind."""
    return isinstance(statement, ast.Expr) and isinstance(getattr(statement.value, "value", None), str)


TARGETS = {
    ast.Assign: lambda s: s.targets,
    ast.AnnAssign: lambda s: [s.target],
    ast.AugAssign: lambda s: [s.target],
    ast.For: lambda s: [s.target],
    ast.With: lambda s: [i.optional_vars for i in s.items if i.optional_vars],
}


def bound(statement: ast.stmt) -> list[str]:
    """The names a module-level statement binds (inside an `if` or `try` too)."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in statement.names]
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    if type(statement) in TARGETS:
        targets = TARGETS[type(statement)](statement)
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(statement, (ast.If, ast.Try)):
        inner = [*statement.body, *statement.orelse, *getattr(statement, "finalbody", [])]
        inner += [s for h in getattr(statement, "handlers", []) for s in h.body]
        return [n for s in inner for n in bound(s)]
    return []
