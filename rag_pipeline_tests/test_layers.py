"""The import structure: no circle between modules, and no import from a lower layer to a higher one.

Layers, lowest first: the lib packages in stage order (core ... serving, release, asks), then `settings`, then
`defs`, then `definitions`, then the command-line modules. `lib` imports no Dagster, and neither does
any module `ask` reaches; LanceDB is imported behind the served-store seam only. Inside `defs`, the
platform wing (`defs/platform/`) imports no stage module (a module directly in `defs/`), and a stage
module imports lib, the platform and the resources, never another stage; Dagster's private API is
imported only by the wing's internals modules, which import and name no project module."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rag_pipeline"
LIB = [
    "core",
    "sources",
    "questions",
    "chunking",
    "embedding",
    "retrieval",
    "evaluation",
    "answers",
    "judging",
    "serving",
    "release",
    "asks",
]
TOP = ["settings", "defs", "definitions"]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
PLATFORM = "rag_pipeline.defs.platform"
INTERNALS = f"{PLATFORM}.internals"
STAGES = {m for m, p in MODULES.items() if p.parent == PACKAGE / "defs" and p.name != "__init__.py"}


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "lib":
        return LIB.index(parts[2])
    if len(parts) >= 2 and parts[1] in TOP:
        return len(LIB) + TOP.index(parts[1])
    return len(LIB) + len(TOP)  # the command-line modules: run, show_report, gold, ...


def imports(path: Path, top_level_only: bool) -> set[str]:
    """The project modules `path` imports (at module level only, if asked)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rag_pipeline"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("rag_pipeline")}
    return found


def test_no_module_imports_a_higher_layer():
    wrong = [
        f"{module} imports {target}"
        for module, path in MODULES.items()
        for target in imports(path, top_level_only=False)
        if layer(target) > layer(module)
    ]
    assert not wrong


def packages(path: Path) -> set[str]:
    """The top-level packages `path` imports anywhere (inside a function or under `if TYPE_CHECKING`
    too), and every name its type annotations use (quoted ones too: `lancedb.table.Table`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
        elif isinstance(node, (ast.arg, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef)):
            note = (
                node.returns if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else node.annotation
            )
            for part in ast.walk(note) if note is not None else ():
                if isinstance(part, ast.Name):
                    found.add(part.id)
                elif isinstance(part, ast.Constant) and isinstance(part.value, str):
                    found |= set(re.findall(r"\b(\w+)\.", part.value))
    return found


def test_the_platform_imports_no_stage_module():
    wrong = [
        f"{module} imports {target}"
        for module, path in MODULES.items()
        if within(module, PLATFORM)
        for target in imports(path, top_level_only=False)
        if target in STAGES
    ]
    assert STAGES and not wrong


def test_a_stage_module_imports_lib_the_platform_and_the_resources_only():
    allowed = ("rag_pipeline.lib", PLATFORM, "rag_pipeline.defs.resources")
    wrong = [
        f"{module} imports {target}"
        for module in sorted(STAGES)
        for target in imports(MODULES[module], top_level_only=False)
        if not any(within(target, a) for a in allowed)
    ]
    assert not wrong


def private_dagster(path: Path) -> set[str]:
    """The private modules of Dagster (`dagster._...`) that `path` imports anywhere."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        found |= {n for n in names if n.startswith("dagster._")}
    return found


def project_names(path: Path) -> set[str]:
    """The project modules `path` imports, and its strings that name one (a module handed to
    Dagster by name), docstrings aside."""
    tree = ast.parse(path.read_text())
    scopes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, scopes) and ast.get_docstring(n)}
    strings = {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    }
    return imports(path, top_level_only=False) | {t for t in strings if "rag_pipeline" in t}


def test_only_the_internals_import_dagsters_private_api_and_they_name_no_project_module():
    users = {m for m, p in MODULES.items() if private_dagster(p)}
    internals = {m for m in MODULES if within(m, INTERNALS)}
    assert users and users <= internals, users - internals
    naming = {m: found for m in sorted(internals) if (found := project_names(MODULES[m]))}
    assert not naming


def test_lib_imports_no_dagster():
    users = [
        m
        for m, p in MODULES.items()
        if m.startswith("rag_pipeline.lib") and any(n.startswith("dagster") for n in packages(p))
    ]
    assert not users


def reached(module: str) -> set[str]:
    """The project modules importing `module` imports, itself and their packages included."""
    found, todo = set(), [module]
    while todo:
        current = todo.pop()
        parts = current.split(".")
        for name in (".".join(parts[:n]) for n in range(1, len(parts) + 1)):
            if name in MODULES and name not in found:
                found.add(name)
                todo += imports(MODULES[name], top_level_only=False)
    return found


# checks a RAG_REINDEX_CRON other than the default as Dagster's schedules do, importing Dagster then only
ASK_EXEMPT = {"rag_pipeline.settings.parsers"}


def test_the_ask_path_imports_no_dagster():
    """`python -m rag_pipeline.ask` serves a question on lib, the settings and its command alone:
    no module it reaches imports Dagster, the definitions or `defs`."""
    path = reached("rag_pipeline.ask")
    assert {"rag_pipeline.cli.ask", "rag_pipeline.settings.models", "rag_pipeline.lib.serving"} <= path
    wrong = sorted(
        m
        for m in path - ASK_EXEMPT
        if m.split(".")[1:2] in (["defs"], ["definitions"])
        or any(n.startswith("dagster") for n in packages(MODULES[m]))
    )
    assert not wrong


def test_lancedb_is_imported_by_two_modules_at_most():
    """LanceDB sits behind the served-store seam (`lib/serving/store.py`): its store (`lance.py`) and
    that store's sync (`tables.py`); every other module uses the seam's types."""
    users = sorted(m for m, p in MODULES.items() if "lancedb" in packages(p))
    assert len(users) <= 2 and all(m.startswith("rag_pipeline.lib.serving.") for m in users), users


def test_there_is_no_import_circle():
    """Not even through an import inside a function or under `if TYPE_CHECKING`."""
    graph = {
        m: {t for t in imports(p, top_level_only=False) if t in MODULES and t != m}
        for m, p in MODULES.items()
    }
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            pytest.fail(" -> ".join([*path[path.index(module) :], module]))
        if module in done:
            return
        for target in graph[module]:
            visit(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def test_no_module_is_over_300_lines():
    tests = Path(__file__).resolve().parent
    long = [
        str(p)
        for p in [*PACKAGE.rglob("*.py"), *tests.rglob("*.py")]
        if len(p.read_text().splitlines()) > 300
    ]
    assert not long


LONGEST = 60  # lines: a stage asset is a declaration and a few lines calling lib


def test_no_function_under_defs_is_over_60_lines():
    """A stage module declares assets and resources, the wing adapts Dagster: the logic is lib's. A
    function's lines run from its `def` to its end, nested functions included."""
    long = [
        f"{module_name(path)}.{node.name}"
        for path in (PACKAGE / "defs").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > LONGEST
    ]
    assert not long
