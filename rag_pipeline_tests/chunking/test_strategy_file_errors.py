"""A bad strategy file names the file, the entry and the problem."""

import re
import textwrap
from pathlib import Path

import pytest

from rag_pipeline.lib.chunking import StrategyError, load_strategies, read_strategy_file


def write(tmp_path: Path, toml: str, name: str = "strategies.toml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(toml))
    return str(path)


A = '[[strategy]]\nname = "a"\n'  # the start of an entry named `a`

# fmt: off
BAD_FILES = [
    (A + 'kind = "fxed"', "#1 'a': unknown kind 'fxed'; known kinds: fixed, section, section-split, recursive, python"),
    (A + "size = 3", "#1 'a': missing `kind`; known kinds: fixed,"),
    (A + 'kind = "section"\n' + A + 'kind = "section"', "#2 'a': duplicate name 'a', already used by [[strategy]] #1 'a'"),
    ('[[strategy]]\nname = "section"\nkind = "section"', "#1 'section': name 'section' is taken by a built-in"),
    ('[[strategy]]\nname = "My_Chunks"\nkind = "section"', "#1 'My_Chunks': bad name 'My_Chunks': use lowercase"),
    ('[[strategy]]\nkind = "section"', "#1: missing `name`"),
    (A + 'kind = "fixed"', "#1 'a': missing parameter `size`"),
    (A + 'kind = "fixed"\nsize = "300"', "#1 'a': parameter `size` must be an integer >= 1, not '300'"),
    (A + 'kind = "recursive"\nsize = 100\noverlap = 100', "#1 'a': parameter `overlap` (100) must be smaller than `size` (100)"),
    (A + 'kind = "section-split"\nlimit = 100\noverlap = -1', "#1 'a': parameter `overlap` must be an integer >= 0, not -1"),
    (A + 'kind = "section"\nmax_level = 7', "#1 'a': parameter `max_level` must be a heading level 1-6, not 7"),
    (A + 'kind = "fixed"\nsize = 9\nsise = 3', "#1 'a': unknown parameter(s) sise for kind 'fixed'; its parameters: size, overlap"),
    (A + 'kind = "python"', "#1 'a': missing parameter `callable`"),
    (A + 'kind = "python"\ncallable = "my_chunkers.by_line"', "must look like `package.module:function`, not 'my_chunkers.by_line'"),
    (A + 'kind = "python"\ncallable = "no_such_mod:f"', "#1 'a': cannot import module 'no_such_mod' of `callable` 'no_such_mod:f': ModuleNotFoundError"),
    (A + 'kind = "python"\ncallable = "my_chunkers:missing"', "#1 'a': module 'my_chunkers' has no 'missing'"),
    (A + 'kind = "python"\ncallable = "my_chunkers:NOT_A_FUNCTION"', "#1 'a': `callable` 'my_chunkers:NOT_A_FUNCTION' is not callable but a int"),
    (A + 'kind = "python"\ncallable = "builtins:len"', "#1 'a': cannot read the source of `callable` 'builtins:len'"),
    (A + 'kind = "section"\n[[strategy]', "invalid TOML: .*line 4"),
    ("title = 'x'", "holds one or more [[strategy]] tables and nothing else (found top-level title)"),
    ("", "holds one or more [[strategy]] tables"),
]
# fmt: on


@pytest.mark.parametrize(("toml", "message"), BAD_FILES)
def test_a_bad_file_names_the_file_the_entry_and_the_problem(tmp_path, chunkers, toml, message):
    path = write(tmp_path, toml, "bad.toml")
    pattern = message if message.startswith("invalid TOML") else re.escape(message)
    with pytest.raises(StrategyError, match=rf"^{re.escape(path)}: (\[\[strategy\]\] )?.*{pattern}"):
        read_strategy_file(path)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(StrategyError, match=r"nope\.toml: cannot read the strategy file: No such file"):
        load_strategies(None, str(tmp_path / "nope.toml"))
