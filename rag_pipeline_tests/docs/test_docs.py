"""README.md and docs/ are tested: every shell and Python snippet runs against one shared build of
the bundled corpus (hashing embedder), or says before it why it cannot run here; the settings
table is the code's; the site builds with `mkdocs build --strict`, so a broken link fails."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from rag_pipeline.settings import PROJECT_ROOT

PAGES = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").rglob("*.md"))]
RUNNERS = {"bash": ["bash", "-euo", "pipefail", "-c"], "python": [sys.executable, "-c"]}
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->")


@dataclass(frozen=True)
class Snippet:
    page: str
    line: int
    language: str
    code: str
    not_run: str | None  # why it cannot run here, from the comment just before it

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def snippets() -> list[Snippet]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            reason = NOT_RUN.fullmatch(before.strip())
            found.append(
                Snippet(
                    str(page.relative_to(PROJECT_ROOT)),
                    text.count("\n", 0, match.start()) + 1,
                    match.group(1).strip(),
                    match.group(2),
                    reason.group(1) if reason else None,
                )
            )
    return found


RUNNABLE = [s for s in snippets() if s.language in RUNNERS and s.not_run is None]


def test_every_snippet_has_a_language_and_every_skip_a_reason():
    problems = [
        f"{s}: a fence without a language (bash, python, text, ...)" for s in snippets() if not s.language
    ]
    problems += [f"{s}: `not run:` without a reason" for s in snippets() if s.not_run == ""]
    problems += [
        f"{s}: {s.language} is neither run nor marked not run"
        for s in snippets()
        if s.language in ("sh", "shell", "console", "py", "python3")
    ]
    assert not problems, "\n".join(problems)
    assert RUNNABLE  # the harness finds what it runs


def test_the_settings_table_lists_every_setting():
    script = runpy.run_path(str(PROJECT_ROOT / "scripts" / "settings_table.py"))
    page = script["PAGE"].read_text()
    listed = set(re.findall(r"^\| `(RAG_\w+)` \|", page, re.MULTILINE))
    assert listed == {var.name for var in script["VARS"].values()}, "run scripts/settings_table.py"
    assert script["with_table"](page) == page, "run scripts/settings_table.py"


def test_the_readmes_links_lead_to_files():
    """mkdocs checks the links of docs/; README.md lies outside it, so its links are checked here."""
    readme = PROJECT_ROOT / "README.md"
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text())
    local = [t for t in targets if "://" not in t]
    assert local and not [t for t in local if not (PROJECT_ROOT / t).exists()]


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A working directory laid out as a clone after `make run` with RAG_EMBEDDER=hashing:
    `.venv` is this checkout's, `data/build` a fresh build of the bundled corpus."""
    work = tmp_path_factory.mktemp("docs")
    (work / ".venv").symlink_to(PROJECT_ROOT / ".venv")
    home = work / "data" / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(
        "run_coordinator:\n  module: dagster.core.run_coordinator\n  class: DefaultRunCoordinator\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {
        "RAG_DATA_DIR": str(work / "data" / "build"),
        "DAGSTER_HOME": str(home),
        "RAG_EMBEDDER": "hashing",
    }
    run = subprocess.run(
        [sys.executable, "-m", "rag_pipeline.run"], cwd=work, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return work, env


@pytest.mark.slow
@pytest.mark.parametrize("snippet", RUNNABLE, ids=str)
def test_snippet_runs(snippet: Snippet, built):
    work, env = built
    done = subprocess.run(
        [*RUNNERS[snippet.language], snippet.code],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (
        f"{snippet} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )


ASK = re.compile(r"\.venv/bin/python -m rag_pipeline\.ask \"([^\"]+)\"(.*?)(?:\s+#.*)?$")
ASKED = [(s, line) for s in RUNNABLE for line in s.code.splitlines() if ASK.search(line)]
CITED = re.compile(r"^  \[\d+\] (\S+) > ", re.MULTILINE)  # after the answer: the notes it cites


def ask(line: str, built) -> tuple[str, list[str]]:
    """The answer `ask` prints for the command `line`, and the notes it cites."""
    work, env = built
    done = subprocess.run(
        ["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = done.stdout.split("\nanswer (", 1)[1]
    return answer.split("\n", 2)[1].strip(), CITED.findall(answer)


@pytest.mark.slow
@pytest.mark.parametrize(("snippet", "line"), ASKED, ids=[f"{s}#{i}" for i, (s, _) in enumerate(ASKED)])
def test_every_ask_example_shows_what_it_is_there_to_show(snippet: Snippet, line: str, built):
    """An example asked with `--groups` is answered from a note only those groups may read; one
    asked without them, of the same question in the same snippet, gets no such note (the answerer
    abstains); any other example is answered."""
    import pandas as pd

    question, options = ASK.search(line).groups()
    answer, cited = ask(line, built)
    access = pd.read_parquet(built[0] / "data" / "build" / "notes" / "cleaned_notes.parquet")
    restricted = {note for note, groups in zip(access["note"], access["access"]) if len(groups)}
    contrasted = any(
        ASK.search(other)[1] == question and "--groups" in ASK.search(other)[2]
        for other in snippet.code.splitlines()
        if ASK.search(other)
    )
    if "--groups" in options:
        assert answer != "(abstained)" and set(cited) & restricted, (answer, cited)
    elif contrasted:
        assert answer == "(abstained)" and not set(cited) & restricted, (answer, cited)
    else:
        assert answer != "(abstained)", (line, answer)


@pytest.mark.slow
def test_the_reports_ask_example_is_answered(built):
    """`make run`'s report ends with an `ask` of a question the served configuration answered."""
    work, env = built
    report = subprocess.run(
        [sys.executable, "-m", "rag_pipeline.show_report"], cwd=work, env=env, capture_output=True, text=True
    )
    (line,) = [line for line in report.stdout.splitlines() if "rag_pipeline.ask" in line]
    answer, cited = ask(line.split("    ask the live index")[0], built)
    assert answer != "(abstained)" and cited, (line, answer)


def test_the_site_builds_strictly(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
