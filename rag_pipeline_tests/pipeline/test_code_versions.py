"""Code versions come from the code: in a copy of the package, a statement added to a metric changes
the code version of the evaluation assets and of no chunks or embeddings asset; a comment, a
docstring or a setting's help text changes none. Each state's Definitions are loaded in a process of
their own, with a cache of fingerprints of its own (the test's), or none."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "rag_pipeline"
METRICS = Path("rag_pipeline/lib/evaluation/metrics.py")
SHOW = """
import json
from rag_pipeline.definitions import build_definitions
from rag_pipeline.settings import Settings
graph = build_definitions(Settings.from_env({"RAG_EMBEDDER": "hashing"})).resolve_asset_graph()
print(json.dumps({k.to_user_string(): graph.get(k).code_version for k in graph.materializable_asset_keys}))
"""


def code_versions(root: Path, seed: str = "0", first: str = "", cache: Path | None = None) -> dict[str, str]:
    """Each asset's code version in a new process, which runs `first` before it loads the
    definitions; `cache`: where it keeps fingerprints (default: a new directory, so none is kept)."""
    cache = cache or Path(tempfile.mkdtemp(prefix="fingerprints-"))
    shown = subprocess.run(
        [sys.executable, "-c", first + SHOW],
        cwd=root,
        env=os.environ | {"PYTHONPATH": str(root), "PYTHONHASHSEED": seed, "XDG_CACHE_HOME": str(cache)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(shown.stdout.splitlines()[-1])


def first_function_edited(root: Path, addition: str) -> None:
    """`addition` (indented) after the docstring of the first function of the metrics module."""
    path = root / METRICS
    text = path.read_text()
    start = text.index("\ndef ")
    body = text.index('"""', text.index('"""', start) + 3) + 3
    path.write_text(text[:body] + "\n" + addition + text[body:])


NO_LOGIC = {  # file: (text, another text)
    "rag_pipeline/settings/stages.py": (
        '"comma-separated strategy names (default: the built-in six)"',
        '"strategy names, separated by commas"',
    ),
    # how fingerprints are kept: the code that names code is no logic of what it names
    "rag_pipeline/lib/core/codestate.py": ("KEEP_STATES = 16", "KEEP_STATES = 17"),
}


@pytest.mark.parametrize("path", sorted(NO_LOGIC))
def test_a_settings_help_text_or_the_fingerprints_cache_changes_no_code_version(tmp_path, path):
    """The settings table is no logic: a setting enters a version only as the value an asset reads."""
    root = tmp_path / "copy"
    shutil.copytree(PACKAGE, root / "rag_pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    before = code_versions(root)
    text, other = NO_LOGIC[path]
    assert text in (root / path).read_text()
    (root / path).write_text((root / path).read_text().replace(text, other))
    assert code_versions(root) == before


def test_fingerprints_made_as_modules_load_are_those_made_after(tmp_path):
    """A module's versions computed as it loads (the cleaner's, the reader's, the prompt's) read only
    modules loaded whole: the same digests as computed once everything is loaded."""
    check = """
from rag_pipeline.lib.core import fingerprint as fp
from rag_pipeline.lib.answers import PROMPT_VERSION, make_prompt
from rag_pipeline.lib.questions.generate import OFFLINE, offline_candidates
from rag_pipeline.lib.sources import CLEANER_VERSION, READER_VERSION, cleaned_rows, read_notes
import rag_pipeline.definitions
fp.forget()
fp.KEPT.path = fp.KEPT.path.with_name("after.json")
assert CLEANER_VERSION == f"clean@{fp.fingerprint([cleaned_rows])}"
assert READER_VERSION == f"reader@{fp.fingerprint([read_notes])}"
assert PROMPT_VERSION == f"answer-prompt@{fp.fingerprint([make_prompt])}"
assert OFFLINE == f"offline@{fp.fingerprint([offline_candidates])[:12]}"
"""
    env = os.environ | {"XDG_CACHE_HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", check], env=env, check=True)


@pytest.mark.slow
def test_a_metric_changed_reruns_evaluation_and_never_chunks_or_embeddings(tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(PACKAGE, root / "rag_pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    before = code_versions(root)
    first_function_edited(root, "    # a comment says why, and changes nothing")
    first_function_edited(root, '    """A second docstring line changes nothing either."""')
    assert code_versions(root) == before
    first_function_edited(root, "    unused = 0  # noqa: F841")
    after = code_versions(root)
    changed = {k for k in before if before[k] != after[k]}
    assert {k for k in changed if k.startswith("evaluation_")} == {
        k for k in before if k.startswith("evaluation_")
    }
    assert not {k for k in changed if k.startswith(("chunks_", "embeddings_", "index_"))}
    assert not changed & {"source_notes", "cleaned_notes", "questions"}


def test_the_code_versions_are_those_of_every_process():
    """Not of the order a set of names came in (it follows the process's hash seed): two lambdas of
    one module once shared a name, and which one the fingerprint read changed from run to run."""
    root = PACKAGE.parent
    assert code_versions(root, "1") == code_versions(root, "2") == code_versions(root, "3")


def test_the_code_versions_are_those_of_dagsters_own_processes():
    """Dagster's code server and daemon make structlog's logger class the default before they load the
    definitions: a module's logger, once named by its class, gave the webserver other code versions
    than `make run`'s (the UI showed every embeddings asset unsynced after a build)."""
    root = PACKAGE.parent
    structlog_first = "import structlog\nstructlog.stdlib.LoggerFactory()\n"
    assert code_versions(root, first=structlog_first) == code_versions(root)


def test_the_code_versions_are_those_of_a_checkout_elsewhere(tmp_path):
    """Not of where the checkout lies (two machines, or a clone moved): a setting's default path in
    it, and a module's `__file__`, once gave every asset a code version of its own per place."""
    root = tmp_path / "elsewhere"
    shutil.copytree(PACKAGE, root / "rag_pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "data").mkdir()  # and the checkout's files a setting's default names: the prices' bytes
    shutil.copy(PACKAGE.parent / "data" / "prices.toml", root / "data")
    assert code_versions(root) == code_versions(PACKAGE.parent)
