"""A bad strategy file names the file, the entry and the problem."""

import json
import re
import textwrap
from pathlib import Path

import pytest

from rag_pipeline.lib.chunking import StrategyError, load_strategies, read_strategy_file


def write(tmp_path: Path, toml: str, name: str = "strategies.toml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(toml))
    return str(path)


# each: a strategy file's text, and what its error must say
BAD_FILES = [
    (c["toml"], c["message"])
    for c in json.loads((Path(__file__).parent / "bad_strategy_files.json").read_text())
]


@pytest.mark.parametrize(("toml", "message"), BAD_FILES)
def test_a_bad_file_names_the_file_the_entry_and_the_problem(tmp_path, chunkers, toml, message):
    path = write(tmp_path, toml, "bad.toml")
    pattern = message if message.startswith("invalid TOML") else re.escape(message)
    with pytest.raises(StrategyError, match=rf"^{re.escape(path)}: (\[\[strategy\]\] )?.*{pattern}"):
        read_strategy_file(path)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(StrategyError, match=r"nope\.toml: cannot read the strategy file: No such file"):
        load_strategies(None, str(tmp_path / "nope.toml"))
