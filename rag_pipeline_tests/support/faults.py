"""Faults the differential test injects into a `make run`, each at a random point after the source was
read, and takes away again: a step that raises, a full disk, the chat server down, and `kill -9` of
the process that runs the run. The first two strike every file written under a randomly chosen folder
of the data directory (through the one function every local output is written with), so they hit
whichever step writes there first. The source step's own files are never struck: a narrowing of
access is applied when the source is read (`release/revoked.json`), and a fault before that leaves
the new commit unread, for the next `make run` to read."""

import errno
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.lib.core import storage
from rag_pipeline.lib.core.localfile import disk_space

# where a write fails: a folder each stage writes to (notes/ is the source steps')
FOLDERS = ("chunks", "embeddings", "retrieval", "evaluation", "reports", "answers", "release")
SOURCE_STEP = ("revoked.json",)  # what the source step writes outside notes/
KINDS = ("raise", "disk", "outage", "kill")


@contextmanager
def failing_writes(data: Path, folder: str, disk: bool) -> Iterator[None]:
    """Every write of a file under `data`/`folder` fails: a full disk (as the OS reports it), or an
    error of the step."""
    original = storage.write_local

    def write_local(path: Path, write: Callable[[str], None]) -> None:
        if Path(path).is_relative_to(data / folder) and Path(path).name not in SOURCE_STEP:
            if disk:
                with disk_space(Path(path)):
                    raise OSError(errno.ENOSPC, "No space left on device")
            raise RuntimeError(f"injected fault writing {path}")
        original(path, write)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(storage, "write_local", write_local)
        yield


@contextmanager
def outage(llm) -> Iterator[None]:
    """The chat server answers 503 to every request."""
    llm.faults[:] = ["503"] * 10_000
    try:
        yield
    finally:
        llm.faults.clear()


def killed_run(env: dict[str, str], home: Path, rng: random.Random, instance: dg.DagsterInstance) -> str:
    """`python -m rag_pipeline.run` on the instance in `home`, killed (`kill -9`) a random moment
    after its run read the source (the source step is where a narrowing of access is applied); what
    happened, in words."""
    before = {r.run_id for r in instance.get_runs()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_pipeline.run"],
        env=os.environ | {"DAGSTER_HOME": str(home)} | env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        ends = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < ends:
            runs = [r for r in instance.get_runs() if r.run_id not in before]
            kinds = {dg.DagsterEventType.ASSET_MATERIALIZATION}
            if runs and instance.get_records_for_run(runs[0].run_id, of_type=kinds, limit=1).records:
                time.sleep(rng.uniform(0.0, 3.0))
                break
            time.sleep(0.1)
        if proc.poll() is not None:
            return f"kill -9 (the run ended first, exit {proc.returncode})"
        os.kill(proc.pid, signal.SIGKILL)
        return "kill -9 of the run"
    finally:
        proc.wait()
