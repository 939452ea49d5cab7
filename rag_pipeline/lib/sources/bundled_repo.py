"""Build the bundled notes repository from `data/corpus/` with fixed authors and dates,
so its commits get the same sha on every machine.

Commit 1 is `base/`; commit 2 overlays `update/` (one note edited, one added).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import git

AUTHOR = git.Actor("rag-pipeline corpus", "corpus@rag-pipeline.invalid")
COMMITS = [
    ("base", "Add the first notes", "Mon, 05 Jan 2026 09:00:00 +0000"),
    ("update", "Revise one note and add another", "Mon, 02 Feb 2026 09:00:00 +0000"),
]


STAMP = "rag-corpus-stamp"


def corpus_stamp(corpus: Path) -> str:
    """A hash of every corpus file's path and bytes: the built repository is stale when it changes."""
    h = hashlib.sha256()
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(corpus)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def build_repository(corpus: Path, dest: Path) -> git.Repo:
    """Create (or replace) `dest` as a git repository holding the corpus history; built aside, then renamed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}."))
    try:
        repo = git.Repo.init(tmp, initial_branch="main")
        for folder, message, date in COMMITS:
            src = corpus / folder
            if not src.exists():  # a corpus with one commit has no update/
                continue
            files = sorted(p for p in src.rglob("*") if p.is_file())
            for path in files:
                target = tmp / path.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
            repo.index.add([str(p.relative_to(src)) for p in files])
            repo.index.commit(message, author=AUTHOR, committer=AUTHOR, author_date=date, commit_date=date)
        (tmp / ".git" / STAMP).write_text(corpus_stamp(corpus))
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(dest, old)
            shutil.rmtree(old)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return git.Repo(dest)


def ensure_repository(corpus: Path, dest: Path) -> Path:
    """Build the repository unless it exists and was built from the corpus as it is now."""
    stamp = dest / ".git" / STAMP
    if not stamp.exists() or stamp.read_text() != corpus_stamp(corpus):
        build_repository(corpus, dest)
    return dest


if __name__ == "__main__":  # python -m rag_pipeline.lib.sources.bundled_repo CORPUS_DIR REPO_DIR
    import sys

    print(ensure_repository(Path(sys.argv[1]), Path(sys.argv[2])))
