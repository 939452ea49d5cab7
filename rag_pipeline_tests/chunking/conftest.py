"""The strategy-file tests' fixture: a module of python chunkers on the path."""

import sys
from pathlib import Path

import pytest

CHUNKER_MODULE = '''
def by_line(text, sections):
    """One chunk per line."""
    ends = [i + 1 for i, c in enumerate(text) if c == "\\n"]
    return list(zip([0, *ends], ends))


def by_section(text, sections):
    return [(s.start, s.end) for s in sections]


def bad(text, sections):
    return SPANS


def broken(text, sections):
    return {"level": 2}["heading"]


SPANS = []
NOT_A_FUNCTION = 3
'''


@pytest.fixture
def chunkers(tmp_path: Path, monkeypatch) -> Path:
    """A module of chunkers importable as `my_chunkers`, freshly imported in each test."""
    folder = tmp_path / "chunkers"
    folder.mkdir()
    (folder / "my_chunkers.py").write_text(CHUNKER_MODULE)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "my_chunkers", raising=False)
    return folder / "my_chunkers.py"
