"""Redis, PostgreSQL and Celery workers on 127.0.0.1 for the tests, started by scripts/services.sh as
`make services` and `make worker` start them (on free ports, in a directory of their own)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path

from rag_pipeline.settings import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "services.sh"


def missing() -> str | None:
    """Why the services cannot start here, or None. CI installs both (.ci/run)."""
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (apt-get install redis-server; .ci/run installs it)"
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        return "PostgreSQL is not installed (apt-get install postgresql; .ci/run installs it)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def services() -> Iterator[dict[str, str]]:
    """Redis and PostgreSQL started, then stopped; yields the environment of a run and its workers:
    DAGSTER_HOME (Postgres storage), the Celery broker and backend, and the script's own settings."""
    # not under pytest's tmp_path: PostgreSQL runs as the `postgres` user, who cannot enter it
    directory = Path(tempfile.mkdtemp(prefix="rag-services-"))
    directory.chmod(0o755)
    redis = free_port()
    env = {
        "RAG_SERVICES_DIR": str(directory),
        "RAG_REDIS_PORT": str(redis),
        "RAG_PG_PORT": str(free_port()),
        "RAG_CELERY_BROKER": f"redis://127.0.0.1:{redis}/0",
        "RAG_CELERY_BACKEND": f"redis://127.0.0.1:{redis}/1",
        "DAGSTER_HOME": str(directory / "dagster_home"),
    }
    try:
        subprocess.run([str(SCRIPT), "start"], env=os.environ | env, check=True, capture_output=True)
        yield env
    finally:
        subprocess.run([str(SCRIPT), "stop"], env=os.environ | env, capture_output=True)
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def worker(name: str, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """One Celery worker (`make worker`), ready to take steps; stopped with its processes after."""
    with open(log, "w") as out:
        process = subprocess.Popen(
            [str(SCRIPT), "worker", name],
            env=os.environ | env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped with the celery processes it starts
        )
    try:
        deadline = time.monotonic() + 180
        while " ready." not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {name} did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield process
    finally:
        stop(process, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            stop(process, signal.SIGKILL)


def stop(process: subprocess.Popen, how: int) -> None:
    """Signal a worker with the Celery processes it started (its group), if any is left."""
    with suppress(ProcessLookupError):  # killed already (a test of a lost worker)
        os.killpg(process.pid, how)


@contextmanager
def workers(names: list[str], env: dict[str, str], logs: Path) -> Iterator[None]:
    logs.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        for name in names:
            stack.enter_context(worker(name, env, logs / f"{name}.log"))
        yield
