"""`make dev` stops whole on SIGINT or SIGTERM to its process group (Ctrl-C, or a script's `kill`):
`python -m rag_pipeline.dev` runs `dagster dev` in a group of its own and stops all of it, the
webserver, the daemon and the code servers, also when started as a script's background job, whose
SIGINT a non-interactive shell ignores."""

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from rag_pipeline.cli.instance import make
from rag_pipeline.settings import PROJECT_ROOT
from rag_pipeline_tests.fakes.json_server import free_port


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2)
    except OSError:
        return False
    return True


def running(group: str) -> list[str]:
    """The processes of a process group that still run (an ended one its parent has not reaped yet,
    a zombie, does not)."""
    listed = subprocess.run(["ps", "-o", "stat=,args=", "-g", group], capture_output=True, text=True).stdout
    return [line for line in listed.splitlines() if not line.lstrip().startswith("Z")]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_dev_stops_whole_on_a_signal_to_its_group(small_env, tmp_path, signum):
    home = tmp_path / "dagster_home"
    make(home)
    port = free_port()
    with (tmp_path / "dev.log").open("w") as log:
        dev = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rag_pipeline.dev",
                "-w",
                "workspace.yaml",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
            ],
            cwd=PROJECT_ROOT,
            env=os.environ | small_env | {"DAGSTER_HOME": str(home)},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the script's process group
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # a background job's
        )
    try:
        ends = time.monotonic() + 300
        while not answers(f"http://127.0.0.1:{port}/server_info") and time.monotonic() < ends:
            assert dev.poll() is None, (tmp_path / "dev.log").read_text()[-2000:]
            time.sleep(1)
        (group,) = subprocess.check_output(["pgrep", "-P", str(dev.pid)], text=True).split()
        os.killpg(dev.pid, signum)
        assert dev.wait(timeout=60) == 128 + signum
        assert running(group) == []  # nothing of dagster dev's is left
        assert not answers(f"http://127.0.0.1:{port}/server_info")
    finally:
        if dev.poll() is None:
            os.killpg(dev.pid, signal.SIGKILL)
