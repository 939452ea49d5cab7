"""Which process runs a run, and whether it still does: a process is named by its pid and its start
time (a pid alone may be taken by a new process after the old one died)."""

from __future__ import annotations

import os
import socket


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name (which may hold spaces), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None


def this_process() -> str:
    """`pid@start` of this process (the start in clock ticks since boot, where /proc tells)."""
    fields = _stat(os.getpid())
    return f"{os.getpid()}@{fields[19].decode() if fields else ''}"


def this_host() -> str:
    return socket.gethostname()


def alive(process: str) -> bool:
    """Whether the process `pid@start` (or a bare pid) of this host still runs: the pid exists, is
    not a zombie (killed, not yet reaped) and, where /proc tells, started when it did."""
    pid, _, started = process.partition("@")
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    fields = _stat(int(pid))
    if fields is None:  # no /proc here: the pid is all there is to go by
        return True
    return fields[0] not in (b"Z", b"X") and (not started or fields[19].decode() == started)
