"""Which files of a commit are notes, and the slug each note is known by."""

from __future__ import annotations

import re
from pathlib import PurePosixPath


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob where `**/` spans any number of folders and `*` stays inside one."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def note_id(path: str) -> str:
    """The slug: a Hugo bundle's folder name (`.../<slug>/index.md`), else the file stem."""
    p = PurePosixPath(path)
    return p.parent.name if p.stem in ("index", "_index") and p.parent.name else p.stem


# a URL (`https://...`, `ssh://...`) or git's scp-like `user@host:path`; anything else is a local path
