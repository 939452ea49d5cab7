"""`python -m rag_pipeline.dev ARGS` (`make dev`): `dagster dev ARGS`, stopped whole by SIGINT or SIGTERM.

`dagster dev` starts the webserver, the daemon and code servers; sent SIGINT or SIGTERM with them
(Ctrl-C, or `kill` of the process group, as a script does), it left them running here, and SIGINT
is ignored outright when a non-interactive shell started it in the background. So it runs in a
process group of its own, with SIGINT's default restored; a signal to this process asks it to stop
as Ctrl-C does, and `GRACE` seconds later what is left of its group is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

GRACE = 10.0  # seconds for `dagster dev` to stop its services before they are killed


def signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # every process of it has ended
        os.killpg(group, signum)


def main(argv: list[str] | None = None) -> int:
    dagster = Path(sys.executable).with_name("dagster")
    child = subprocess.Popen(
        [str(dagster), "dev", *(sys.argv[1:] if argv is None else argv)],
        start_new_session=True,  # a group of its own: signalled by this process, all of it, once
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Ctrl-C's default again
    )
    asked: list[tuple[int, float]] = []  # (signal, when)

    def on_signal(signum: int, frame) -> None:
        if not asked:
            asked.append((signum, time.monotonic()))
            signal_group(child.pid, signal.SIGINT)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)
    while child.poll() is None and not (asked and time.monotonic() - asked[0][1] > GRACE):
        time.sleep(0.2)
    signal_group(child.pid, signal.SIGKILL)  # its services, if `dagster dev` left any behind
    code = child.wait()
    return 128 + asked[0][0] if asked else code
