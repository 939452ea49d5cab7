"""Incremental equals from scratch after a code edit. In a copy of the package, each edit of logic (at
least one per stage: the cleaner, each chunker family, each analyzer, the hashing embedder, a fusion,
a metric, the extractive answerer, a rule of the rules judge) is applied and `make run`'s command
run on the small repository: every report, lane file, answers, judgments and served table must equal
a fresh build of the edited code; the edit reverted and run again, they must equal the first build.
Edits of no logic (a comment, a docstring, a setting's help text, `ruff format`) leave nothing stale.

CI runs every edit of no logic and a seeded random two of logic; all of them on demand (a failure
names the edit and shows the first rows that differ):
    RAG_CODE_EDITS=all .venv/bin/python -m pytest rag_pipeline_tests/pipeline/test_code_edits.py
(RAG_CODE_EDITS=<n> runs n of them, RAG_CODE_EDITS_SEED=<seed> picks another few.)
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from rag_pipeline_tests.pipeline.test_differential import frame, served
from rag_pipeline_tests.support.repos import NOTES, QUESTIONS, make_notes_repo

PACKAGE = Path(__file__).resolve().parents[2] / "rag_pipeline"
CHOSEN = os.environ.get("RAG_CODE_EDITS", "2")
SEED = int(os.environ.get("RAG_CODE_EDITS_SEED", "51"))
# a lane of each chunker family, small enough for the small repository's notes
STRATEGIES = """strategy = [
  {name = "fixed", kind = "fixed", size = 120, overlap = 20},
  {name = "split", kind = "section-split", limit = 60, overlap = 10},
  {name = "recursive", kind = "recursive", size = 100, overlap = 20},
]
"""


@dataclass(frozen=True)
class Edit:
    path: str  # under rag_pipeline/
    old: str
    new: str
    analyzer: str = "char"  # the analyzer its builds run with

    def apply(self, root: Path, forward: bool = True) -> None:
        path = root / "rag_pipeline" / self.path
        old, new = (self.old, self.new) if forward else (self.new, self.old)
        text = path.read_text()
        assert text.count(old) == 1, f"{self.path}: {old!r} is not there once"
        path.write_text(text.replace(old, new))


LOGIC = {
    "cleaner: a link's text": Edit(
        "lib/sources/cleaning.py", 'sub(r"\\1", text)', 'sub(r"\\1 (link)", text)'
    ),
    "fixed chunker: its step": Edit(
        "lib/chunking/spans.py", "len(text), size - overlap)", "len(text), size)"
    ),
    "section chunker: its levels": Edit(
        "lib/chunking/spans.py", "s.level <= max_level]", "s.level < max_level]"
    ),
    "section-split chunker: its limit": Edit(
        "lib/chunking/spans.py", "if end - start <= limit:", "if end - start <= 2 * limit:"
    ),
    "recursive chunker: its breaks": Edit(
        "lib/chunking/spans.py",
        "((1, PARAGRAPH_END), (2, SENTENCE_BREAK))",
        "((2, PARAGRAPH_END), (1, SENTENCE_BREAK))",
    ),
    "char analyzer: its n-grams": Edit(
        "lib/retrieval/lexical.py", "ns: tuple[int, ...] = (2, 3)", "ns: tuple[int, ...] = (2,)"
    ),
    "sudachi analyzer: particles kept": Edit(
        "lib/retrieval/lexical.py", '"空白", "助詞", ', '"空白", ', analyzer="sudachi"
    ),
    "hashing embedder: its scaling": Edit(
        "lib/embedding/embedders.py", "return np.log1p(out)", "return np.sqrt(out)"
    ),
    "rrf fusion: its rank offset": Edit(
        "lib/retrieval/fusion.py", "1.0 / (k + rank)", "1.0 / (k + rank + 1)"
    ),
    "nDCG: its discount": Edit(
        "lib/evaluation/metrics.py", "np.log2(r + 1) for r in", "np.log2(r + 2) for r in"
    ),
    "extractive answerer: its threshold": Edit(
        "lib/answers/extractive.py", '"hashing": 0.47', '"hashing": 0.6'
    ),
    "rules judge: a declining answer": Edit(
        "lib/judging/rules.py", 'YES, "declines: no claim"', 'NO, "declines: no claim"'
    ),
}
HELP = '"comma-separated strategy names (default: the built-in six)"'
NO_LOGIC = {
    "a comment": Edit(
        "lib/retrieval/fusion.py", 'appears in."""\n', 'appears in."""\n    # why: a comment\n'
    ),
    "a docstring": Edit("lib/evaluation/metrics.py", "found; micro:", "found (as they were); micro:"),
    "a setting's help text": Edit("settings/stages.py", HELP, '"strategy names, separated by commas"'),
}


def chosen() -> list[str]:
    names = sorted(LOGIC)
    return names if CHOSEN == "all" else random.Random(SEED).sample(names, int(CHOSEN))


class Checkout:
    """A copy of the package, its data directory and instance for `make run`, and its builds."""

    def __init__(self, root: Path):
        self.root = root
        shutil.copytree(PACKAGE, root / "rag_pipeline", ignore=shutil.ignore_patterns("__pycache__"))
        repo = make_notes_repo(root / "notes", NOTES)
        (root / "questions.json").write_text(json.dumps(QUESTIONS, ensure_ascii=False))
        (root / "strategies.toml").write_text(STRATEGIES)
        self.settings = {
            "RAG_NOTES_REPO": repo.working_tree_dir,
            "RAG_QUESTIONS": str(root / "questions.json"),
            "RAG_EMBEDDER": "hashing",
            "RAG_STRATEGY_FILE": str(root / "strategies.toml"),
            "RAG_STRATEGIES": "fixed,section,split,recursive",
        }
        self.first: dict[str, dict] = {}  # by analyzer: the outputs of the first build

    def run(self, data: str, analyzer: str) -> str:
        """`make run`'s command on the data directory `data` (with its own instance); what it printed."""
        home = self.root / data / "dagster_home"
        home.mkdir(parents=True, exist_ok=True)
        (home / "dagster.yaml").touch()
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")} | self.settings
        env |= {"RAG_ANALYZER": analyzer, "RAG_DATA_DIR": str(self.root / data / "out")}
        env |= {
            "PYTHONPATH": str(self.root),
            "DAGSTER_HOME": str(home),
            "XDG_CACHE_HOME": str(self.root / "cache"),
        }
        # from the copy's folder: `python -m` puts the folder it starts in first on the path
        command = [sys.executable, "-m", "rag_pipeline.run"]
        done = subprocess.run(command, cwd=self.root, env=env, capture_output=True, text=True)
        said = done.stdout + done.stderr
        assert done.returncode in (0, 3), (
            f"make run in {data} failed:\n{said[-3000:]}"
        )  # 3: release held back
        return said

    def incremental(self, analyzer: str) -> Path:
        """The data directory `make run` keeps building on, built first when new."""
        if analyzer not in self.first:
            self.run(f"incremental-{analyzer}", analyzer)
            self.first[analyzer] = outputs(self.root / f"incremental-{analyzer}" / "out")
        return self.root / f"incremental-{analyzer}" / "out"

    def fresh(self, analyzer: str) -> dict:
        shutil.rmtree(self.root / "fresh", ignore_errors=True)
        self.run("fresh", analyzer)
        return outputs(self.root / "fresh" / "out")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Checkout:
    return Checkout(tmp_path_factory.mktemp("code-edits"))


def outputs(data: Path) -> dict[str, object]:
    """Every output compared: Parquet files (without what is measured), plots, served tables."""
    found: dict[str, object] = {}
    for stage in ("notes", "chunks", "retrieval", "evaluation", "reports", "answers"):
        for path in sorted((data / stage).glob("*.parquet")):
            found[f"{stage}/{path.name}"], found[f"{stage}/{path.name} metadata"] = frame(path)
    found |= {f"reports/{p.name}": p.read_bytes() for p in sorted((data / "reports").glob("*.png"))}
    return found | {
        f"table {p.stem}": served(data, p.stem) for p in sorted((data / "lancedb").glob("*.lance"))
    }


def plain(value: object) -> object:
    """A cell as a comparable value: a vector or list as a tuple, a missing value as one token."""
    if isinstance(value, (str, bytes)):
        return value
    if hasattr(value, "__len__"):
        return tuple(plain(v) for v in value)
    return "<missing>" if value is None or value is pd.NA or value != value else value


def differences(got: dict, want: dict, shown: int = 3) -> list[str]:
    """What differs, each with the first rows that do (as they are incrementally, then fresh)."""
    found = [
        f"{name}: only in {'the incremental build' if name in got else 'the fresh one'}"
        for name in sorted(set(got) ^ set(want))
    ]
    for name in sorted(set(got) & set(want)):
        a, b = got[name], want[name]
        if not isinstance(a, pd.DataFrame):
            found += [f"{name}: differs"] if a != b else []
            continue
        if list(a.columns) != list(b.columns):
            found.append(f"{name}: columns {list(a.columns)} != {list(b.columns)}")
            continue
        rows_a, rows_b = (
            [tuple(map(plain, r)) for r in a.itertuples(index=False)],
            [tuple(map(plain, r)) for r in b.itertuples(index=False)],
        )
        if rows_a != rows_b:
            at = [i for i in range(max(len(rows_a), len(rows_b))) if rows_a[i : i + 1] != rows_b[i : i + 1]][
                :shown
            ]
            lines = [
                f"  row {i}: {a.iloc[i].to_dict() if i < len(a) else None}\n       != {b.iloc[i].to_dict() if i < len(b) else None}"
                for i in at
            ]
            found.append(
                f"{name}: {len(rows_a)} rows and {len(rows_b)}; first differing:\n" + "\n".join(lines)
            )
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NO_LOGIC))
def test_an_edit_of_no_logic_leaves_nothing_stale(checkout, name):
    checkout.incremental("char")
    NO_LOGIC[name].apply(checkout.root)
    try:
        said = checkout.run("incremental-char", "char")
    finally:
        NO_LOGIC[name].apply(checkout.root, forward=False)
    assert "nothing is stale" in said, f"{name}:\n{said[-2000:]}"


@pytest.mark.slow
def test_ruff_format_leaves_nothing_stale(checkout):
    checkout.incremental("char")
    copy = checkout.root / "copy-before-format"
    shutil.copytree(checkout.root / "rag_pipeline", copy)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "-q",
            "--line-length",
            "70",
            str(checkout.root / "rag_pipeline"),
        ],
        check=True,
    )
    try:
        said = checkout.run("incremental-char", "char")
    finally:
        shutil.rmtree(checkout.root / "rag_pipeline")
        copy.rename(checkout.root / "rag_pipeline")
    assert "nothing is stale" in said, said[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", chosen())
def test_an_edit_of_logic_equals_a_fresh_build_and_reverted_the_first(checkout, name):
    edit = LOGIC[name]
    data = checkout.incremental(edit.analyzer)
    edit.apply(checkout.root)
    try:
        checkout.run(data.parent.name, edit.analyzer)
        again = checkout.run(data.parent.name, edit.analyzer)
        assert "nothing is stale" in again, f"{name}: still stale after one run:\n{again[-2000:]}"
        fresh = checkout.fresh(edit.analyzer)
    finally:
        edit.apply(checkout.root, forward=False)
    assert differences(fresh, checkout.first[edit.analyzer]), (
        f"{name}: changes no output; pick an edit that does"
    )
    found = differences(outputs(data), fresh)
    assert not found, (
        f"{name}: the incremental build is not the fresh build of the edited code:\n" + "\n".join(found)
    )
    checkout.run(data.parent.name, edit.analyzer)
    found = differences(outputs(data), checkout.first[edit.analyzer])
    assert not found, f"{name}, reverted: the incremental build is not the first build:\n" + "\n".join(found)
