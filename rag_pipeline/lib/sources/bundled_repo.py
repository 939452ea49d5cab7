"""Build the bundled notes repository from `data/corpus/` once, then keep it: later edits of the
corpus are committed on top of it, never replacing its history or a commit its user made.

Commit 1 is `base/`; commit 2 overlays `update/` (one note edited, one added). Both have fixed
authors, committers, dates and messages, so their shas are the same on every machine and the
questions' `commit` labels resolve everywhere.
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
SYNC_MESSAGE = "Apply the edits of data/corpus/"

STAMP = "rag-corpus-stamp"


class BundledRepoError(ValueError):
    """The corpus's edits cannot be committed on top of the built repository without losing work."""


def corpus_stamp(corpus: Path) -> str:
    """A hash of every corpus file's path and bytes: the corpus changed since the last sync when it differs."""
    h = hashlib.sha256()
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(corpus)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def corpus_files(corpus: Path) -> dict[str, bytes]:
    """The notes as the corpus has them now: each commit folder overlaid on the previous one."""
    files: dict[str, bytes] = {}
    for folder, _, _ in COMMITS:
        src = corpus / folder
        for path in sorted(p for p in src.rglob("*") if p.is_file()) if src.exists() else []:
            files[path.relative_to(src).as_posix()] = path.read_bytes()
    return files


def build_repository(corpus: Path, dest: Path) -> git.Repo:
    """Create `dest` (replacing it) as a git repository holding the corpus's fixed history; built
    aside, then renamed."""
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
    """Build the repository if it does not exist; else commit the corpus's edits since it was last
    synced on top of its head (`sync_corpus`)."""
    if not (dest / ".git").exists():
        build_repository(corpus, dest)
        return dest
    stamp = dest / ".git" / STAMP
    now = corpus_stamp(corpus)
    if not stamp.exists() or stamp.read_text() != now:
        sync_corpus(corpus, git.Repo(dest))
        stamp.write_text(now)
    return dest


def blobs(commit: git.Commit) -> dict[str, bytes]:
    return {b.path: b.data_stream.read() for b in commit.tree.traverse() if b.type == "blob"}


def sync_corpus(corpus: Path, repo: git.Repo) -> str | None:
    """Commit on top of HEAD what changed in the corpus since its last sync (the newest commit
    by the corpus's author); returns the new commit's sha, or None when the notes are unchanged.

    A file that the repository's own commits changed since that sync, or uncommitted changes,
    stop it with a message: the corpus's edit would overwrite the user's work.
    """
    where = repo.working_tree_dir
    synced = next((c for c in repo.iter_commits("HEAD") if c.author.email == AUTHOR.email), None)
    if synced is None:
        raise BundledRepoError(f"{where}: no commit of the bundled corpus in its history; {rebuild(where)}")
    had, want = blobs(synced), corpus_files(corpus)
    changed = sorted(p for p in had.keys() | want.keys() if had.get(p) != want.get(p))
    if not changed:
        return None
    if repo.is_dirty(untracked_files=True):
        raise BundledRepoError(
            f"{where} has uncommitted changes, and data/corpus/ changed too: commit or discard them "
            f"(`git -C {where} status`), then run again; the corpus's edits are committed on top"
        )
    head = blobs(repo.head.commit)
    mine = [p for p in changed if head.get(p) != had.get(p)]
    if mine:
        raise BundledRepoError(
            f"{where}: {', '.join(mine)} changed both in data/corpus/ and in a commit of {where}; "
            f"make the edit in one place only: {rebuild(where)}"
        )
    root = Path(where)
    for path in changed:
        if path in want:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(want[path])
    repo.index.add([p for p in changed if p in want])
    if gone := [p for p in changed if p not in want]:
        repo.index.remove(gone, working_tree=True)
    return repo.index.commit(f"{SYNC_MESSAGE} ({len(changed)} files)", author=AUTHOR, committer=AUTHOR).hexsha


def rebuild(where: str) -> str:
    return (
        f"to rebuild it from data/corpus/ (dropping its own commits) run `rm -rf {where}`, "
        "or revert the edit in data/corpus/ and commit it in the repository instead"
    )
