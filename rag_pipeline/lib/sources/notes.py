"""Read Markdown notes straight from a git commit tree (no checkout)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import git

from rag_pipeline.lib.core import shown_path
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.sources.access import NotesSourceError, access_groups, gives_access
from rag_pipeline.lib.sources.cascade import INDEX, Cascaded, Cascades, Entry, index_entries, sections_above
from rag_pipeline.lib.sources.frontmatter import FrontMatterError, split_front_matter, title_of
from rag_pipeline.lib.sources.paths import glob_regex, note_id


@dataclass(frozen=True)
class SourceNote:
    note: str
    path: str
    commit: str
    # the note's blob sha, or when a section cascades its access, a digest of both: it changes
    # exactly when its bytes or the groups cascaded onto it change
    source_version: str
    title: str
    raw: str
    access: tuple[str, ...] = ()  # the groups that may read the note; empty: public
    cascade: str = ""  # the `_index.md` whose `cascade` gave `access`; empty: the note's own front matter


def note_version(sha: str, cascaded: Cascaded | None) -> str:
    """The version of a note whose blob is `sha` and onto which a section cascades `cascaded`."""
    if cascaded is None:
        return sha
    return hashlib.sha256(f"{sha}\0{','.join(cascaded.groups)}".encode()).hexdigest()[:40]


def with_cascade(note: SourceNote, sha: str, cascaded: Cascaded | None) -> SourceNote:
    """`note`, which names no groups itself, with the groups `cascaded` gives it."""
    if cascaded is None:
        return note
    return replace(
        note, access=cascaded.groups, source_version=note_version(sha, cascaded), cascade=cascaded.source
    )


_REMOTE = re.compile(r"[a-z][a-z0-9+.-]*://|[^/:]+@[^/:]+:", re.IGNORECASE)


def is_remote(location: str) -> bool:
    """Whether a repository `location` is a git URL rather than a local path."""
    return bool(_REMOTE.match(location.strip()))


def open_repository(location: str, cache_dir: Path) -> git.Repo:
    """A local repository as it is, or a bare mirror of a URL kept under `cache_dir` and fetched.

    A mirror that cannot be opened or fetched (a clone killed half-way) is cloned again beside
    it and swapped in, so a broken mirror never fails every later run."""
    if not is_remote(location):
        path = Path(location).expanduser()
        if not path.is_dir():
            what = "is a file, not a directory" if path.exists() else "no such directory"
            raise NotesSourceError(
                f"RAG_NOTES_REPO={shown_path(location)}: {what}; set it to a git repository's path or a git URL"
            )
        try:
            return git.Repo(path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise NotesSourceError(
                f"RAG_NOTES_REPO={shown_path(location)}: not a git repository (no .git); run `git init` and commit "
                "the notes there, or set RAG_NOTES_REPO to a repository's path or URL"
            ) from exc
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


def resolve_commit(repo: git.Repo, ref: str, given: str = "RAG_NOTES_REF") -> git.Commit:
    """The commit `ref` names; `given`: the variable or option the user gave it by, for the error."""
    try:
        return repo.commit(ref)
    except (git.BadName, git.BadObject, ValueError) as exc:
        where = shown_path(repo.working_tree_dir or repo.git_dir)
        raise NotesSourceError(
            f"{given}={ref}: names no commit of {where}; set it to a branch, tag or commit there"
        ) from exc


def note_entries(commit: git.Commit, glob: str, exclude: Sequence[str]) -> list[tuple[str, str]]:
    """(path, blob sha) of every file matching `glob` and no `exclude` pattern (matched on the
    path or the file name), listed by one `git ls-tree` (the tree is not walked in Python)."""
    include = glob_regex(glob)
    excluded = [glob_regex(p) for p in exclude]
    listing = commit.repo.git.ls_tree("-r", "-z", "--full-tree", commit.hexsha, stdout_as_string=False)
    entries = []
    for line in listing.decode("utf-8", "surrogateescape").split("\0"):
        if not line:
            continue
        meta, path = line.split("\t", 1)
        _, kind, sha = meta.split()
        if kind != "blob" or not include.match(path):
            continue
        if any(p.match(path) or p.match(PurePosixPath(path).name) for p in excluded):
            continue
        entries.append((path, sha))
    return entries


def blob_text(commit: git.Commit, path: str, sha: str) -> str:
    try:
        return commit.repo.odb.stream(bytes.fromhex(sha)).read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotesSourceError(f"{path} at commit {commit.hexsha[:12]}: not UTF-8 ({exc})") from exc


def read_cascades(commit: git.Commit, paths: Sequence[str]) -> Cascades:
    """The `access` cascades of the `_index.md` files above the notes at `paths` (others are not
    read); one that cannot be read is an error raised for the notes below it."""
    above = {index for path in paths for index in sections_above(path)}
    found: dict[str, list[Entry] | NotesSourceError] = {}
    for path, sha in note_entries(commit, f"**/{INDEX}", ()):
        if path in above:
            try:
                found[path] = index_entries(
                    blob_text(commit, path, sha), f"{path} at commit {commit.hexsha[:12]}"
                )
            except NotesSourceError as exc:
                found[path] = exc
    return Cascades(found)


def reused(
    known: Mapping[tuple[str, str], SourceNote], path: str, sha: str, cascaded: Cascaded | None
) -> SourceNote | None:
    """The note at `path`, blob `sha`, as read before (`known`, by path and version) with what is
    cascaded onto it now; None when it must be read."""
    if cascaded is not None and (hit := known.get((path, note_version(sha, cascaded)))):
        return replace(hit, cascade=cascaded.source)  # the same groups, maybe from another section
    hit = known.get((path, sha))  # a note that named its own groups, or public then
    return hit if hit is None or hit.access else with_cascade(hit, sha, cascaded)


def read_note(
    commit: git.Commit, path: str, sha: str, cascades: Cascades, known: Mapping[tuple[str, str], SourceNote]
) -> SourceNote:
    """The note at `path` (blob `sha`): its title and groups, its own or cascaded (see `read_notes`)."""
    cascaded = cascades.onto(path)
    if (hit := reused(known, path, sha, cascaded)) is not None:
        return replace(hit, commit=commit.hexsha)
    raw, slug = blob_text(commit, path, sha), note_id(path)
    try:
        fields, _ = split_front_matter(raw)
    except FrontMatterError as exc:
        raise NotesSourceError(f"{path} at commit {commit.hexsha[:12]}: {exc}") from None
    access = access_groups(fields, f"{path} at commit {commit.hexsha[:12]}")
    note = SourceNote(slug, path, commit.hexsha, sha, title_of(fields, slug), raw, access)
    return note if gives_access(fields) else with_cascade(note, sha, cascaded)


def read_notes(
    commit: git.Commit,
    glob: str,
    exclude: list[str],
    known: Mapping[tuple[str, str], SourceNote] | None = None,
) -> list[SourceNote]:
    """Every note `note_entries` finds, with its title and access groups: its own front matter's,
    else those a section's `_index.md` cascades onto it (`cascade.py`).

    `known` holds notes read before by this same reader, keyed by (path, source_version): their
    blobs are not read or parsed again (equal path and bytes give an equal note), so a build reads
    what changed."""
    notes: dict[str, SourceNote] = {}
    entries = note_entries(commit, glob, exclude)
    cascades = read_cascades(commit, [path for path, _ in entries])
    for path, sha in entries:
        slug = note_id(path)
        if slug in notes:
            raise NotesSourceError(f"note id {slug!r} is used by two files: {notes[slug].path} and {path}")
        notes[slug] = read_note(commit, path, sha, cascades, known or {})
    if not notes:
        raise NotesSourceError(f"no file matches {glob!r} at commit {commit.hexsha[:12]}")
    return sorted(notes.values(), key=lambda n: n.note)


def readable_access(commit: git.Commit, glob: str, exclude: list[str]) -> dict[str, tuple[str, ...] | None]:
    """Per note at a commit whose notes stop the build, its groups, or None where they cannot be
    read (the note, or an `_index.md` above it, does not read; two files share its id): what
    narrowing the live release needs (`narrow_live`), which withholds those from everyone."""
    entries = note_entries(commit, glob, exclude)
    cascades = read_cascades(commit, [path for path, _ in entries])
    out: dict[str, tuple[str, ...] | None] = {}
    for path, sha in entries:
        slug = note_id(path)
        try:
            groups = None if slug in out else read_note(commit, path, sha, cascades, {}).access
        except NotesSourceError:
            groups = None
        out[slug] = groups
    return out


def last_changes(repo: git.Repo, commit: str, paths: set[str], since: str | None = None) -> dict[str, str]:
    """For each of `paths`, the newest commit at or before `commit` that changed it.

    With `since` (an ancestor of `commit`), only commits after it are read, and paths none of them
    touched are left out: the caller keeps what it knew at `since`. One `git log` pass, stopped as
    soon as every path is found; history order is git's own (reverse chronological)."""
    try:
        if since is not None and since != commit and not repo.is_ancestor(since, commit):
            since = None
    except git.GitCommandError:  # `since` is not in this repository
        since = None
    if since == commit:
        return {}
    rev = f"{since}..{commit}" if since else commit
    # quotePath off: paths come back as written, not octal-escaped
    command = ["git", f"--git-dir={repo.git_dir}", "-c", "core.quotePath=false", "log", rev]
    command += ["--format=%x00%H", "--name-only", "--no-renames"]
    found: dict[str, str] = {}
    current = ""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as process:
        try:
            for raw in process.stdout:
                line = raw.decode("utf-8", "surrogateescape").rstrip("\n")
                if line.startswith("\0"):
                    current = line[1:]
                elif line in paths and line not in found:
                    found[line] = current
                    if len(found) == len(paths):
                        break
        finally:
            process.kill()
    return found


# what `read_notes` makes of a blob (title, access), as a digest: notes of another reader version are
# read again, never reused
READER_VERSION = f"reader@{fingerprint([read_notes])}"
