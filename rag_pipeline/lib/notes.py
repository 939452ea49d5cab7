"""Read Markdown notes straight from a git commit tree (no checkout)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import git

from rag_pipeline.lib.frontmatter import FrontMatterError, split_front_matter


class NotesSourceError(ValueError):
    """The notes repository, ref or a note in it cannot be read."""


@dataclass(frozen=True)
class SourceNote:
    note: str
    path: str
    commit: str
    source_version: str  # the note's blob sha: changes exactly when its bytes change
    title: str
    raw: str
    access: tuple[str, ...] = ()  # the groups that may read the note; empty: public


def access_groups(value: object, where: str) -> tuple[str, ...]:
    """Front matter `access`: a list of group names, or one name; absent means public."""
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise NotesSourceError(
            f"{where}: `access` must be a group name or a list of group names, got {value!r}"
        )
    return tuple(sorted({n.strip() for n in names}))


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


def open_repository(location: str, cache_dir: Path) -> git.Repo:
    """A local repository as it is, or a bare mirror of a URL kept under `cache_dir` and fetched.

    A mirror that cannot be opened or fetched (a clone killed half-way) is cloned again beside
    it and swapped in, so a broken mirror never fails every later run."""
    if Path(location).expanduser().exists():
        try:
            return git.Repo(Path(location).expanduser())
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise NotesSourceError(f"{location}: not a git repository") from exc
    mirror = cache_dir / hashlib.sha256(location.encode()).hexdigest()[:16]
    if mirror.exists():
        try:
            repo = git.Repo(mirror)
            repo.remote("origin").fetch("+refs/*:refs/*", prune=True)
            return repo
        except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError, ValueError):
            pass  # cloned again below; a remote that is down fails there with git's own message
    return _clone_mirror(location, mirror)


def _clone_mirror(location: str, mirror: Path) -> git.Repo:
    mirror.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=mirror.parent, prefix=f".{mirror.name}."))
    try:
        git.Repo.clone_from(location, tmp, mirror=True)
        if mirror.exists():
            shutil.rmtree(mirror)
        os.replace(tmp, mirror)
    except git.GitCommandError as exc:
        raise NotesSourceError(f"{location}: cannot clone or fetch: {exc.stderr.strip()}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return git.Repo(mirror)


def resolve_commit(repo: git.Repo, ref: str) -> git.Commit:
    try:
        return repo.commit(ref)
    except (git.BadName, ValueError) as exc:
        raise NotesSourceError(f"{repo.git_dir}: ref {ref!r} does not name a commit") from exc


def note_blobs(commit: git.Commit, glob: str, exclude: Sequence[str]) -> Iterator[git.Blob]:
    """Every blob matching `glob` and no `exclude` pattern (matched on the path or the file name)."""
    include = glob_regex(glob)
    excluded = [glob_regex(p) for p in exclude]
    for item in commit.tree.traverse():
        if item.type != "blob" or not include.match(item.path):
            continue
        if any(p.match(item.path) or p.match(PurePosixPath(item.path).name) for p in excluded):
            continue
        yield item


def read_notes(commit: git.Commit, glob: str, exclude: list[str]) -> list[SourceNote]:
    """Every note `note_blobs` finds, with its title and access groups from the front matter."""
    notes: dict[str, SourceNote] = {}
    for item in note_blobs(commit, glob, exclude):
        try:
            raw = item.data_stream.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotesSourceError(f"{item.path} at {commit.hexsha[:12]}: not UTF-8 ({exc})") from exc
        slug = note_id(item.path)
        if slug in notes:
            raise NotesSourceError(
                f"note id {slug!r} is used by two files: {notes[slug].path} and {item.path}"
            )
        try:
            fields, _ = split_front_matter(raw)
        except FrontMatterError as exc:
            raise NotesSourceError(f"{item.path} at commit {commit.hexsha[:12]}: {exc}") from None
        title = str(fields.get("title") or slug)
        access = access_groups(fields.get("access"), f"{item.path} at commit {commit.hexsha[:12]}")
        notes[slug] = SourceNote(slug, item.path, commit.hexsha, item.hexsha, title, raw, access)
    if not notes:
        raise NotesSourceError(f"no file matches {glob!r} at commit {commit.hexsha[:12]}")
    return sorted(notes.values(), key=lambda n: n.note)
