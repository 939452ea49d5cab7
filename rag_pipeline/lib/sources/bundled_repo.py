"""Build the bundled notes repository from `data/corpus/` once, then keep it: later edits of the
corpus are committed on top of it, never replacing its history or a commit its user made.

Commit 1 is `base/`; commit 2 overlays `update/` (one note edited, one added). Both have fixed
authors, committers, dates and messages, so their shas are the same on every machine and the
questions' `commit` labels resolve everywhere.

What the corpus held at its last sync is read back from the history: every commit by the corpus's
author wrote exactly the corpus's changes, so replaying them, oldest first, gives it. A note whose
HEAD differs from that, a commit of the user's, is never overwritten: a corpus edit of it stops the
sync, every time.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import git

from rag_pipeline.lib.core import shown_path
from rag_pipeline.lib.sources.notes import NotesSourceError

AUTHOR = git.Actor("rag-pipeline corpus", "corpus@rag-pipeline.invalid")
COMMITS = [
    ("base", "Add the first notes", "Mon, 05 Jan 2026 09:00:00 +0000"),
    ("update", "Revise one note and add another", "Mon, 02 Feb 2026 09:00:00 +0000"),
]
SYNC_MESSAGE = "Apply the edits of data/corpus/"
SHOWN = 5  # the paths an announcement names; the rest are counted

STAMP = "rag-corpus-stamp"
_builds: dict[tuple[Path, Path], Path] = {}  # temporary builds this process reads, by (corpus, dest)


class BundledRepoError(NotesSourceError):
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


def blob_sha(data: bytes) -> str:
    """The id git gives a file of these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


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


def ensure_repository(corpus: Path, dest: Path) -> str | None:
    """Build the repository if it does not exist, else commit the corpus's edits since it was last
    synced on top of its head (`sync_corpus`); one line saying what was done, None when nothing was."""
    if not (dest / ".git").exists():
        repo = build_repository(corpus, dest)
        return (
            f"built {shown_path(dest)} from {shown_path(corpus)}/: {len(COMMITS)} commits, "
            f"head {repo.head.commit.hexsha[:12]}"
        )
    stamp = dest / ".git" / STAMP
    now = corpus_stamp(corpus)
    if stamp.exists() and stamp.read_text() == now:
        return None
    said = sync_corpus(corpus, git.Repo(dest))
    stamp.write_text(now)
    return said


def would_sync(corpus: Path, dest: Path) -> str | None:
    """What `ensure_repository` would do, said and done nowhere; it raises as that would."""
    if not (dest / ".git").exists():
        return (
            f"would build {shown_path(dest)} from {shown_path(corpus)}/ (a temporary copy is read meanwhile)"
        )
    stamp = dest / ".git" / STAMP
    if stamp.exists() and stamp.read_text() == corpus_stamp(corpus):
        return None
    repo = git.Repo(dest)
    edits, _ = corpus_edits(corpus, repo)
    head = repo.head.commit.hexsha[:12]
    return (
        f"would apply {edited(edits, corpus)} as a commit on top of {head}: {listed(edits)}"
        if edits
        else None
    )


def readable_repository(corpus: Path, dest: Path) -> Path:
    """`dest` when it is built; else a temporary build of the corpus (the same commits), made once per
    process and removed at its exit, so reading writes nothing where the user looks."""
    if (dest / ".git").exists():
        return dest
    key = (corpus.resolve(), dest.resolve())
    if key not in _builds:
        scratch = Path(tempfile.mkdtemp(prefix="rag-notes-repo-"))
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        _builds[key] = build_repository(corpus, scratch / "repo").working_tree_dir
    return Path(_builds[key])


def tree_files(repo: git.Repo, rev: str) -> dict[str, str]:
    """Path -> blob sha of every file at `rev`."""
    listing = repo.git.ls_tree("-r", "-z", "--full-tree", rev)
    entries = (line.split("\t", 1) for line in listing.split("\0") if line)
    return {path: meta.split()[2] for meta, path in entries}


def synced_files(repo: git.Repo) -> dict[str, str]:
    """Path -> blob sha of the corpus as last synced: the corpus author's commits replayed, oldest first."""
    files: dict[str, str] = {}
    log = repo.git.log("--reverse", "--topo-order", "--format=%H %ae", "HEAD").splitlines()
    for sha in (s for s, _, email in (line.partition(" ") for line in log) if email == AUTHOR.email):
        fields = repo.git.diff_tree("-r", "-z", "--no-renames", "--root", "--no-commit-id", sha).split("\0")
        for meta, path in zip(fields[0::2], fields[1::2]):
            *_, blob, status = meta.split()
            if status == "D":
                files.pop(path, None)
            else:
                files[path] = blob
    return files


def corpus_edits(corpus: Path, repo: git.Repo) -> tuple[list[str], dict[str, bytes]]:
    """The paths the corpus changed since its last sync that HEAD does not hold yet, and the corpus's
    files. Raises when one of them was changed by a commit of the user's too, or when the working
    tree has uncommitted changes: committing the corpus's edit would overwrite their work."""
    where = shown_path(repo.working_tree_dir)
    had = synced_files(repo)
    if not had:
        raise BundledRepoError(
            f"{where}: no commit of the bundled corpus in its history; {rebuild(where, corpus)}"
        )
    want = corpus_files(corpus)
    now = {p: blob_sha(data) for p, data in want.items()}
    head = tree_files(repo, "HEAD")
    edits = sorted(p for p in had.keys() | now.keys() if had.get(p) != now.get(p) != head.get(p))
    if not edits:
        return [], want
    if repo.is_dirty(untracked_files=True):
        raise BundledRepoError(
            f"{where} has uncommitted changes, and {shown_path(corpus)}/ changed too: commit or discard them "
            f"(`git -C {where} status`), then run again; the corpus's edits are committed on top"
        )
    if mine := [p for p in edits if head.get(p) != had.get(p)]:
        both = "; ".join(
            f"{p} changed both in {shown_path(corpus)}/ and in commit "
            f"{repo.git.log('-1', '--format=%h (%s)', 'HEAD', '--', p)} of {where}"
            for p in mine
        )
        raise BundledRepoError(f"{both}; nothing was committed: {rebuild(where, corpus)}")
    return edits, want


def sync_corpus(corpus: Path, repo: git.Repo) -> str | None:
    """Commit on top of HEAD what changed in the corpus since its last sync (`corpus_edits`); the
    line announcing the commit, or None when HEAD holds the corpus already."""
    edits, want = corpus_edits(corpus, repo)
    if not edits:
        return None
    root = Path(repo.working_tree_dir)
    for path in edits:
        if path in want:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(want[path])
    if kept := [p for p in edits if p in want]:
        repo.index.add(kept)
    if gone := [p for p in edits if p not in want]:
        repo.index.remove(gone, working_tree=True)
    sha = repo.index.commit(f"{SYNC_MESSAGE} ({counted(edits)})", author=AUTHOR, committer=AUTHOR).hexsha
    return f"applied {edited(edits, corpus)} as commit {sha[:12]}: {listed(edits)}"


def counted(edits: list[str]) -> str:
    return f"{len(edits)} edit{'s' if len(edits) != 1 else ''}"


def edited(edits: list[str], corpus: Path) -> str:
    return f"{counted(edits)} of {shown_path(corpus)}/"


def listed(paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def rebuild(where: str, corpus: Path) -> str:
    return (
        f"undo the edit in {shown_path(corpus)}/ and make it in {where} instead, or run `rm -rf {where}` to "
        f"rebuild it from {shown_path(corpus)}/ (dropping its own commits)"
    )
