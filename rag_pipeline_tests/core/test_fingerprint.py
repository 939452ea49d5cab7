"""A function's fingerprint follows its logic: the code it runs, transitively, and not its comments,
docstrings or layout. Modules written to a temporary package and imported afresh for each state."""

import importlib
import sys
import textwrap

import pytest

from rag_pipeline.lib.core import fingerprint as fp

BASE = {
    "helpers.py": '''
        import re

        LIMIT = 3
        _WORD = re.compile(r"\\w+")
        _SEEN = {}

        def clip(values):
            """Keep the first few."""
            _SEEN[len(values)] = True
            return [v for v in values[:LIMIT] if _WORD.match(str(v))]
    ''',
    "main.py": """
        from functools import partial

        from fpcase import helpers

        def score(values):
            return sum(helpers.clip(values))

        def unrelated():
            return 1

        TABLE = {"score": score}
        SCORED = partial(score)
    """,
}


@pytest.fixture
def load(tmp_path, monkeypatch):
    monkeypatch.setattr(fp, "PROJECT", "fpcase.")
    monkeypatch.syspath_prepend(str(tmp_path))

    def load(**changed: str):
        (tmp_path / "fpcase").mkdir(exist_ok=True)
        (tmp_path / "fpcase" / "__init__.py").write_text("")
        for name, text in (BASE | changed).items():
            (tmp_path / "fpcase" / name).write_text(textwrap.dedent(text))
        for module in [m for m in sys.modules if m.startswith("fpcase")]:
            del sys.modules[module]
        importlib.invalidate_caches()
        return importlib.import_module("fpcase.main")

    return load


def prints(main) -> dict[str, str]:
    return {n: fp.fingerprint([getattr(main, n)]) for n in ("score", "unrelated", "TABLE", "SCORED")}


def test_comments_docstrings_and_layout_change_nothing(load):
    before = prints(load())
    helpers = """
        import re
        LIMIT = (
            3
        )
        _WORD = re.compile( r"\\w+" )  # a comment
        _SEEN = {}

        def clip(values):
            # why: a comment
            \"\"\"Keep a few.\"\"\"
            _SEEN[ len(values) ] = True
            return [v for v in values[ : LIMIT ] if _WORD.match(str(v))]
    """
    assert prints(load(**{"helpers.py": helpers})) == before


def test_a_change_in_called_code_or_a_constant_changes_its_callers_only(load):
    before = prints(load())
    for helpers in (
        BASE["helpers.py"].replace("LIMIT = 3", "LIMIT = 4"),
        BASE["helpers.py"].replace("values[:LIMIT]", "values[:LIMIT][::-1]"),
        BASE["helpers.py"].replace('r"\\w+"', 'r"\\d+"'),  # a private pattern is logic
    ):
        after = prints(load(**{"helpers.py": helpers}))
        assert {n for n in before if before[n] != after[n]} == {"score", "TABLE", "SCORED"}


def test_code_outside_the_project_is_named_not_read(load):
    main = load()
    assert fp.fingerprint([main.score]) == fp.fingerprint([main.score])
    assert fp.fingerprint([main.partial]) != fp.fingerprint([main.score])


def test_a_private_cache_filled_as_the_process_runs_is_not_logic(load):
    main = load()
    before = prints(main)
    main.helpers._SEEN[99] = "filled"
    assert prints(main) == before
