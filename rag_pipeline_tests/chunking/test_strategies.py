"""Strategies from RAG_STRATEGIES and a TOML strategy file: parsing, errors, versions, one Dagster run."""

import re
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.definitions import build_assets, resources_from_env
from rag_pipeline.lib.chunking import (
    ChunkSpanError,
    StrategyError,
    chunk_note,
    coverage_problems,
    load_strategies,
)
from rag_pipeline.lib.sources import clean_note

BUILTIN_VERSIONS = {
    "fixed-200": "fixed:size=200",
    "fixed-500": "fixed:size=500",
    "fixed-1000": "fixed:size=1000",
    "fixed-2000": "fixed:size=2000",
    "section": "section:max_level=3",
    "section-split": "section-split:limit=800,overlap=120",
}


def shown(strategies) -> dict[str, str]:
    """Each strategy's version without the digest of its code (which must be there)."""
    versions = {}
    for s in strategies:
        kind, _, code = s.version.rpartition("@")
        versions[s.name] = kind if kind and re.fullmatch(r"[0-9a-f]{16}", code) else s.version
    return versions


NOTE = clean_note(
    "---\ntitle: T\n---\n前書きです。\n### A\n"
    + "一つ目の段落の文です。" * 40
    + "\n## B\nFirst sentence here. Second one! A third?\n#### C\n"
    + "short line\n" * 30,
    "T",
)

EVERY_KIND = """
[[strategy]]
name = "fixed-300-o50"
kind = "fixed"
size = 300
overlap = 50

[[strategy]]
name = "h2"
kind = "section"
max_level = 2

[[strategy]]
name = "split-400"
kind = "section-split"
limit = 400
overlap = 60

[[strategy]]
name = "rec-250"
kind = "recursive"
size = 250
overlap = 40

[[strategy]]
name = "lines"
kind = "python"
callable = "my_chunkers:by_line"

[[strategy]]
name = "sections"
kind = "python"
callable = "my_chunkers:by_section"
version = "2"
"""


def write(tmp_path: Path, toml: str, name: str = "strategies.toml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(toml))
    return str(path)


def rows_of(strategy, note: str = "n") -> list[dict]:
    return chunk_note(
        strategy,
        note=note,
        source_version="b",
        commit="c",
        cleaner_version="v",
        text=NOTE.text,
        sections=NOTE.sections,
    )


def test_by_default_the_six_builtins_named_by_kind_parameters_and_code():
    assert shown(load_strategies(None, None)) == BUILTIN_VERSIONS
    assert shown(load_strategies("", None)) == BUILTIN_VERSIONS
    assert [s.name for s in load_strategies("section, fixed-200", None)] == ["section", "fixed-200"]


def test_every_kind_from_a_file(tmp_path, chunkers):
    path = write(tmp_path, EVERY_KIND)
    strategies = load_strategies(None, path)
    assert [s.name for s in strategies] == [
        *BUILTIN_VERSIONS,
        *("fixed-300-o50", "h2", "split-400", "rec-250", "lines", "sections"),
    ]
    by_name = {s.name: s for s in strategies}
    versions = {n: v for n, v in shown(strategies).items() if n not in BUILTIN_VERSIONS}
    assert re.fullmatch(
        r"python:callable=my_chunkers:by_line,version=src-[0-9a-f]{12}", versions.pop("lines")
    )
    assert versions == {
        "fixed-300-o50": "fixed:size=300,overlap=50",
        "h2": "section:max_level=2",
        "split-400": "section-split:limit=400,overlap=60",
        "rec-250": "recursive:size=250,overlap=40",
        "sections": "python:callable=my_chunkers:by_section,version=2",
    }
    overlapping = {n for n, s in by_name.items() if s.overlapping}
    assert overlapping == {"section-split", "fixed-300-o50", "split-400", "rec-250"}
    for strategy in strategies:
        rows = rows_of(strategy)
        assert rows, strategy.name
        assert coverage_problems(rows, {"n": NOTE.text}, strategy.overlapping) == [], strategy.name
    h2 = rows_of(by_name["h2"])
    assert [r["heading_path"] for r in h2] == ["T", "T > B"] and "### A" in h2[0]["text"]  # level 3 stays in
    assert len(rows_of(by_name["lines"])) == NOTE.text.count("\n")
    # the file's names can be selected, alone or with built-ins
    assert [s.name for s in load_strategies("lines,fixed-500", path)] == ["lines", "fixed-500"]


def test_an_unknown_name_lists_the_known_ones(tmp_path, chunkers):
    with pytest.raises(
        StrategyError,
        match=r"RAG_STRATEGIES: unknown strategy 'fixed-300'; known strategies "
        r"\(built-in\): fixed-200, fixed-500, fixed-1000, fixed-2000, section, section-split$",
    ):
        load_strategies("fixed-200,fixed-300", None)
    path = write(tmp_path, EVERY_KIND)
    with pytest.raises(
        StrategyError, match=rf"unknown strategy 'nope'.*from {re.escape(path)}\): .*, rec-250, lines"
    ):
        load_strategies("nope", path)
    with pytest.raises(StrategyError, match="RAG_STRATEGIES: names no strategy"):
        load_strategies(" , ", None)


def test_a_changed_parameter_changes_that_strategy_only(tmp_path, chunkers):
    before = {s.name: s.version for s in load_strategies(None, write(tmp_path, EVERY_KIND))}
    edited = EVERY_KIND.replace("size = 250", "size = 260")
    after = {s.name: s.version for s in load_strategies(None, write(tmp_path, edited))}
    assert {n for n in before if before[n] != after[n]} == {"rec-250"}
    # a python chunker's version follows its source, unless the file gives one
    chunkers.write_text(chunkers.read_text().replace('"""One chunk per line."""', '"""A chunk per line."""'))
    sys.modules.pop("my_chunkers")
    again = {s.name: s.version for s in load_strategies(None, write(tmp_path, EVERY_KIND))}
    assert {n for n in before if before[n] != again[n]} == {"lines"}


A = '[[strategy]]\nname = "a"\n'  # the start of an entry named `a`


@pytest.mark.parametrize(
    ("spans", "problem"),
    [
        ([(0, 5), (5, 10_000)], r"span \(5, 10000\) lies outside; the note's cleaned text is \[0, \d+\)"),
        ([(-1, 5)], r"span \(-1, 5\) lies outside"),
        ([(9, 4)], r"span \(9, 4\) is inverted"),
        ([(4, 4)], r"span \(4, 4\) is empty"),
        ([(0.0, 4)], r"span \(0.0, 4\) is not a \(start, end\) pair of integers"),
        ([(0, 4, 5)], r"span \(0, 4, 5\) is not a \(start, end\) pair"),
        (None, r"the chunker returned a NoneType, not a list of \(start, end\) pairs$"),
        (((0, 4),), r"the chunker returned a tuple, not a list of \(start, end\) pairs$"),
        ({"start": 0}, r"the chunker returned a dict, not a list of \(start, end\) pairs$"),
    ],
)
def test_a_python_chunker_returning_a_bad_span_fails_naming_strategy_and_note(
    tmp_path, chunkers, spans, problem
):
    path = write(tmp_path, A + 'kind = "python"\ncallable = "my_chunkers:bad"\nversion = "1"')
    (strategy,) = load_strategies("a", path)
    sys.modules["my_chunkers"].SPANS = spans
    with pytest.raises(ChunkSpanError, match=r"^strategy 'a' \(python:.*\), note 'n/x': " + problem) as err:
        rows_of(strategy, note="n/x")
    assert isinstance(err.value, ValueError)


def test_a_python_chunker_that_raises_fails_naming_strategy_and_note(tmp_path, chunkers):
    path = write(tmp_path, A + 'kind = "python"\ncallable = "my_chunkers:broken"\nversion = "1"')
    (strategy,) = load_strategies("a", path)
    with pytest.raises(ChunkSpanError) as err:
        rows_of(strategy, note="n/x")
    assert re.fullmatch(
        r"strategy 'a' \(python:callable=my_chunkers:broken,version=1@[0-9a-f]{16}\), note 'n/x': the "
        r"chunker raised KeyError: 'heading'; fix the function \(or the note\)",
        str(err.value),
    )


def embedded(result: dg.ExecuteInProcessResult) -> dict[str, int]:
    """texts_embedded of every embeddings_* materialization of a run."""
    mats = [e.event_specific_data.materialization for e in result.get_asset_materialization_events()]
    return {
        m.asset_key.to_user_string(): m.metadata["texts_embedded"].value
        for m in mats
        if m.asset_key.to_user_string().startswith("embeddings_")
    }


def test_editing_one_file_strategy_rebuilds_only_its_lane(small_env, tmp_path):
    toml = """
    [[strategy]]
    name = "rec"
    kind = "recursive"
    size = 120
    overlap = 30

    [[strategy]]
    name = "fix"
    kind = "fixed"
    size = 150
    overlap = 40
    """
    env = small_env | {"RAG_RETRIEVERS": "dense"}
    data = Path(env["RAG_DATA_DIR"])

    def run(file_text: str) -> tuple[dg.ExecuteInProcessResult, dict[str, pd.DataFrame]]:
        assets = build_assets(load_strategies("rec,fix", write(tmp_path, file_text)))
        result = dg.materialize(
            assets, resources=resources_from_env(env), instance=dg.DagsterInstance.ephemeral()
        )
        assert result.success
        checks = result.get_asset_check_evaluations()
        assert len(checks) >= 2 and all(c.passed for c in checks)
        return result, {s: pd.read_parquet(data / "chunks" / f"{s}.parquet") for s in ("rec", "fix")}

    first, before = run(toml)
    assert all(n > 0 for n in embedded(first).values())
    second, after = run(toml.replace("size = 120", "size = 100"))
    assert {v.rsplit("@", 1)[0] for v in after["rec"]["chunker_version"]} == {"recursive:size=100,overlap=30"}
    assert set(before["rec"]["chunk_id"]) != set(after["rec"]["chunk_id"])
    assert before["fix"]["chunk_id"].tolist() == after["fix"]["chunk_id"].tolist()
    counts = embedded(second)
    assert counts["embeddings_fix"] == 0 and counts["embeddings_rec"] > 0
    summary = pd.read_parquet(data / "reports" / "evaluation_summary.parquet")
    assert set(summary["strategy"]) == {"rec", "fix"}
