"""A function's fingerprint follows its logic: the code it runs, whatever its form, transitively, and
not its comments, docstrings or layout, nor code that is no logic. Modules written to a temporary
package (its `logic` module is logic, as lib/ is; its `glue` module is not, as defs/ is not) and
imported afresh for each state."""

import importlib
import sys
import textwrap

import pytest

from rag_pipeline.lib.core import codestate
from rag_pipeline.lib.core import fingerprint as fp

BASE = {
    "logic/__init__.py": "",
    "logic/helpers.py": '''
        from __future__ import annotations

        import re

        LIMIT = 3
        _WORD = re.compile(r"\\w+")
        _SEEN = {}

        def clip(values):
            """Keep the first few."""
            _SEEN[len(values)] = True
            return [v for v in values[:LIMIT] if _WORD.match(str(v))]

        def path():
            return "a module's function that only shares a name with an attribute"

        class Scale:
            factor = 2

            @property
            def doubled(self) -> int:
                return twice(self.factor)

            @classmethod
            def made(cls) -> Scale:
                return cls()

            @staticmethod
            def rounded(x: float) -> int:
                return round(x)

        def twice(x):
            return 2 * x

        class Reader:
            def read(self):
                return "read"
    ''',
    "logic/main.py": """
        from __future__ import annotations

        from functools import partial

        from fpcase import glue
        from fpcase.logic import helpers

        def score(values):
            return sum(helpers.clip(values))

        def unrelated():
            return 1

        def scaled(scale: helpers.Scale):
            return scale.doubled

        def reads(reader: "helpers.Reader"):
            return reader.read()

        def named(obj):
            return helpers.clip([obj.path])

        def glued():
            return glue.help_text()

        TABLE = {"score": score}
        SCORED = partial(score)
    """,
    "glue.py": """
        def help_text():
            return "comma-separated strategy names"
    """,
}
BASE = {name: textwrap.dedent(text) for name, text in BASE.items()}


@pytest.fixture
def load(tmp_path, monkeypatch):
    monkeypatch.setattr(fp, "PROJECT", "fpcase")
    monkeypatch.setattr(fp, "LOGIC", ("fpcase.logic.",))
    monkeypatch.setattr(fp, "KEPT", codestate.Kept(tmp_path / "kept.json"))
    monkeypatch.syspath_prepend(str(tmp_path))

    def load(**changed: str):
        (tmp_path / "fpcase" / "logic").mkdir(parents=True, exist_ok=True)
        (tmp_path / "fpcase" / "__init__.py").write_text("")
        for name, text in (BASE | changed).items():
            (tmp_path / "fpcase" / name).write_text(text)
        for module in [m for m in sys.modules if m.startswith("fpcase")]:
            del sys.modules[module]
        importlib.invalidate_caches()
        fp.forget()
        return importlib.import_module("fpcase.logic.main")

    yield load
    fp.forget()


NAMES = ("score", "unrelated", "scaled", "reads", "named", "glued")


def prints(main) -> dict[str, str]:
    return {n: fp.fingerprint([getattr(main, n)]) for n in NAMES}


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {n for n in before if before[n] != after[n]}


def helpers(old: str, new: str) -> dict[str, str]:
    assert old in BASE["logic/helpers.py"]
    return {"logic/helpers.py": BASE["logic/helpers.py"].replace(old, new)}


def test_comments_docstrings_and_layout_change_nothing(load):
    before = prints(load())
    text = BASE["logic/helpers.py"]
    for old, new in (
        ("LIMIT = 3", "LIMIT = (\n    3\n)  # a comment"),
        ('"""Keep the first few."""', '# why: a comment\n    """Keep a few."""'),
        ("values[:LIMIT]", "values[ : LIMIT ]"),
    ):
        text = text.replace(old, new)
    assert prints(load(**{"logic/helpers.py": text})) == before


def test_a_change_in_called_code_or_a_constant_changes_its_callers_only(load):
    before = prints(load())
    for old, new in (
        ("LIMIT = 3", "LIMIT = 4"),
        ("values[:LIMIT]", "values[:LIMIT][::-1]"),
        ('r"\\w+"', 'r"\\d+"'),  # a private pattern is logic
    ):
        assert changed(before, prints(load(**helpers(old, new)))) == {"score", "named"}, old


def test_what_a_class_calls_is_followed_behind_property_classmethod_staticmethod(load):
    before = prints(load())
    assert changed(before, prints(load(**helpers("return 2 * x", "return 3 * x")))) == {"scaled"}
    for old, new in (("return cls()", "return cls() or None"), ("round(x)", "round(x, 1)")):
        assert changed(before, prints(load(**helpers(old, new)))) == {"scaled"}, old


def test_an_annotation_written_as_a_string_is_followed(load):
    before = prints(load())
    assert changed(before, prints(load(**helpers('return "read"', 'return "reread"')))) == {"reads"}


def test_an_attribute_of_a_value_is_not_a_modules_function_of_its_name(load):
    """`obj.path` once pulled in the `path` of every project module the function used."""
    before = prints(load())
    assert not changed(before, prints(load(**helpers("an attribute", "another attribute"))))


def test_code_that_is_no_logic_is_named_not_read(load):
    """A help text in glue (as in the settings table) is no logic; marked `@logic`, glue is read."""
    before = prints(load())
    glue = BASE["glue.py"].replace("comma-separated", "comma separated")
    assert not changed(before, prints(load(**{"glue.py": glue})))
    marked = "from rag_pipeline.lib.core.fingerprint import logic\n\n@logic\n" + BASE["glue.py"].strip()
    base = prints(load(**{"glue.py": marked}))
    assert changed(base, prints(load(**{"glue.py": marked.replace("comma-separated", "comma")}))) == {"glued"}


def test_version_and_deps_are_the_knobs(load):
    main = load()
    plain = fp.fingerprint([main.score])
    assert fp.fingerprint([main.score], version=2) != plain != fp.fingerprint([main.score], deps=["x"])
    assert fp.fingerprint([main.score], deps=["x"]) == fp.fingerprint([main.score], deps=["x"])
    # one function's version: its callers' fingerprints change, the rest stay
    bumped = helpers("def twice(x):", "@logic(version=2)\ndef twice(x):")["logic/helpers.py"]
    bumped = bumped.replace(
        "import re\n", "import re\n\nfrom rag_pipeline.lib.core.fingerprint import logic\n"
    )
    before = prints(load())
    assert changed(before, prints(load(**{"logic/helpers.py": bumped}))) == {"scaled"}
    main = sys.modules["fpcase.logic.main"]
    with pytest.raises(TypeError, match="deps="):
        fp.fingerprint([main.score], deps=[object()])
    with pytest.raises(TypeError, match="a value is a dep"):
        fp.fingerprint([main.TABLE])


def test_a_private_cache_filled_as_the_process_runs_is_not_logic(load):
    main = load()
    before = prints(main)
    main.helpers._SEEN[99] = "filled"
    fp.forget()
    assert prints(main) == before


def test_a_fingerprint_is_computed_once_per_code_state(load, monkeypatch):
    """Kept by the digest of the package's files: another process (a step of a run) reads it back."""
    read = []
    visit = fp.Graph.visit
    monkeypatch.setattr(fp.Graph, "visit", lambda graph, obj: read.append(obj) or visit(graph, obj))
    before = prints(load())
    assert read
    read.clear()
    fp.forget()  # as a new process
    assert prints(sys.modules["fpcase.logic.main"]) == before
    assert not read
    assert changed(before, prints(load(**helpers("LIMIT = 3", "LIMIT = 5")))) == {"score", "named"}
    assert read
