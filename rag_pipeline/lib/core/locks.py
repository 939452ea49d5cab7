"""One writer per data directory: an exclusive lock that works across processes on one machine.

It is `flock` on a lock file, so the kernel drops it when its holder dies (no stale lock survives a
crash); re-entrant within a process. The holder writes who it is into the file, so a second writer
waits with a message that names the holding run.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

_held: dict[str, tuple[int, int]] = {}  # lock path -> (file descriptor, depth) in this process
_guard = threading.Lock()


class DirectoryLock:
    def __init__(self, path: Path, holder: str):
        self.path = Path(path)
        self.holder = holder

    def who(self) -> str:
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "another process"
        return f"{info.get('holder', 'another run')} (pid {info.get('pid', '?')}, since {info.get('since', '?')})"

    def acquire(self, wait: Callable[[str], None] | None = None, every_s: float = 30.0) -> None:
        """Take the lock, blocking while another process holds it; `wait` hears who holds it, at
        once and then every `every_s` seconds."""
        key = str(self.path)
        with _guard:
            if key in _held:
                fd, depth = _held[key]
                _held[key] = (fd, depth + 1)
                return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        told = 0.0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if wait is not None and time.monotonic() - told >= every_s:
                    wait(f"waiting for the data directory: {self.who()} holds {self.path.parent}")
                    told = time.monotonic()
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        since = time.strftime("%Y-%m-%d %H:%M:%S")
        os.write(fd, json.dumps({"holder": self.holder, "pid": os.getpid(), "since": since}).encode())
        with _guard:
            _held[key] = (fd, 1)

    def release(self) -> None:
        key = str(self.path)
        with _guard:
            if key not in _held:
                return
            fd, depth = _held[key]
            if depth > 1:
                _held[key] = (fd, depth - 1)
                return
            del _held[key]
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
