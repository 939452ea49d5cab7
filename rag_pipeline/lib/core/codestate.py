"""Which code a process runs, as a digest of the packages' source files, and the fingerprints kept
per code state: computed once per state, by whichever process needs one first, and read by every
other process of the machine (each step process of a run among them)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # rag_pipeline/
KEEP_STATES = 16  # code states whose fingerprints the file keeps: checkouts side by side, a branch moving


@functools.cache
def package_fingerprint(root: Path = PACKAGE_ROOT) -> str:
    """The digest of every source file of the package at `root` (this one: `rag_pipeline/`), by
    path within it and bytes: which code a process runs, the same on every machine with the same
    checkout wherever it lies."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
        digest.update(f"{path.relative_to(root).as_posix()}\x1f".encode())
        digest.update(path.read_bytes() + b"\x1e")
    return digest.hexdigest()[:16]


def code_state(packages: Iterable[str]) -> str:
    """The digest of the top-level `packages`' source files and of the Python version (whose
    syntax trees a fingerprint compares)."""
    files = [package_fingerprint(package_root(p)) for p in sorted(set(packages))]
    return hashlib.sha256(json.dumps([sys.version_info[:2], files]).encode()).hexdigest()[:16]


def package_root(top: str) -> Path:
    module = sys.modules[top]
    paths = list(getattr(module, "__path__", []))
    return Path(paths[0]) if paths else Path(module.__file__ or "")


class Kept:
    """Fingerprints by code state and root, in a JSON file every process of the machine reads and
    adds to (each addition merged with what others wrote, written beside it and renamed over it: a
    reader sees a whole file); the last `KEEP_STATES` code states are kept."""

    def __init__(self, path: Path):
        self.path, self.states = path, None

    def get(self, state: str, key: str) -> str | None:
        if self.states is None:
            self.states = self.load()
        return self.states.get(state, {}).get(key)

    def put(self, state: str, key: str, value: str) -> str:
        states, mine = self.load(), (self.states or {}).get(state, {})
        states[state] = states.pop(state, {}) | mine | {key: value}  # last: the newest state
        self.states = dict(list(states.items())[-KEEP_STATES:])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".code-states.")
            with os.fdopen(fd, "w") as out:
                json.dump(self.states, out)
            os.replace(tmp, self.path)
        except OSError:  # a cache: without it the next process computes them again
            pass
        return value

    def load(self) -> dict[str, dict[str, str]]:
        try:
            found = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}


KEPT = Kept(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "rag-pipeline"
    / f"code-states-py{sys.version_info[0]}{sys.version_info[1]}.json"
)


def forget() -> None:
    package_fingerprint.cache_clear()
    KEPT.states = None
