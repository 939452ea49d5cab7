"""Read Markdown notes straight from a git commit tree (no checkout)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

import git

from rag_pipeline.lib.core import edit_distance
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.sources.frontmatter import FrontMatterError, split_front_matter, title_of
from rag_pipeline.lib.sources.paths import glob_regex, note_id


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


# Keys within `NEAR` edits of `access` that are words of their own, read as unrelated fields. Any
# other key this close, anywhere in the front matter, is taken for a misspelt or misplaced `access`
# and stops the build: a typo must never leave a note public.
UNRELATED_KEYS = frozenset({"accent", "accept", "excess", "success"})
NEAR = 2
_READ_AT = ("", "params")  # where `access` is read: the top level and Hugo's custom fields


def access_groups(fields: Mapping[Any, Any], where: str) -> tuple[str, ...]:
    """The groups a note's front matter `fields` give it; empty (public) only when no `access` is given.

    Fails closed: markup that could be meant to restrict a note is an error naming it, never read
    as public. Read: `access` at the top level and under `params` (where Hugo keeps custom fields;
    both given, they must name the same groups), as `access: sre`, `access: sre, payments` (split
    at commas) or `access: [sre, payments]`. Rejected: a key within `NEAR` edits of `access` (any
    case, at any depth) other than those two and `UNRELATED_KEYS`, an empty value (`access:`,
    `access: ""`, `access: []`), an empty group name, anything but strings, `params` that is not a
    mapping."""
    _near_keys(fields, "", where)
    params = fields.get("params")
    if params is not None and not isinstance(params, Mapping):
        raise NotesSourceError(
            f"{where}: `params` must be a mapping of fields, got {params!r}; write `params: {{access: [sre]}}`"
        )
    top = _groups(fields, "access", where)
    nested = _groups(params or {}, "params.access", where)
    if top is not None and nested is not None and top != nested:
        raise NotesSourceError(
            f"{where}: `access` {list(top)} and `params.access` {list(nested)} name different groups; "
            "give the groups once"
        )
    return top or nested or ()


def _near_keys(value: Any, path: str, where: str) -> None:
    """Raise on the first key, at any depth, that reads like `access` but is not read as it."""
    if isinstance(value, list):
        for i, inner in enumerate(value):
            _near_keys(inner, f"{path}[{i}]", where)
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            name = f"{path}.{key}" if path else str(key)
            hint = _misread(key, path)
            if hint:
                raise NotesSourceError(f"{where}: front matter key {name!r} is not read; {hint}")
            _near_keys(inner, name, where)


def _misread(key: Any, path: str) -> str | None:
    """What to write instead of `key` (found under `path`) when it reads like `access`; else None."""
    folded = key.strip().lower() if isinstance(key, str) else ""
    if (key == "access" and path in _READ_AT) or folded in UNRELATED_KEYS:
        return None
    if edit_distance(folded, "access") > NEAR:
        return None
    if path not in _READ_AT:
        return "groups are read only from `access` at the top level or under `params`"
    if key.lower() == "access":
        return "write `access` (lower case)"
    return "did you mean `access`? (a key this close to `access` stops the build, so that a typo never leaves a note public)"


def _groups(fields: Mapping[Any, Any], name: str, where: str) -> tuple[str, ...] | None:
    """The groups `fields["access"]` names (None when absent), `name` being how the note spells it."""
    if "access" not in fields:
        return None
    value = fields["access"]
    if value is None or value == [] or (isinstance(value, str) and not value.strip()):
        raise NotesSourceError(
            f"{where}: `{name}` is empty ({value!r}); a public note omits the key, "
            "a restricted one lists its groups (`access: [sre]`)"
        )
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(n, str) for n in items):
        raise NotesSourceError(
            f"{where}: `{name}` must be a group name or a list of group names, got {value!r}"
        )
    names = [part.strip() for item in items for part in item.split(",")]
    if not all(names):
        raise NotesSourceError(f"{where}: `{name}` holds an empty group name: {value!r}")
    return tuple(sorted(set(names)))


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
                f"RAG_NOTES_REPO={location}: {what}; set it to a git repository's path or a git URL"
            )
        try:
            return git.Repo(path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise NotesSourceError(
                f"RAG_NOTES_REPO={location}: not a git repository (no .git); run `git init` and commit "
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
        where = repo.working_tree_dir or repo.git_dir
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


def note_blobs(commit: git.Commit, glob: str, exclude: Sequence[str]) -> Iterator[git.Blob]:
    """The blobs of `note_entries`."""
    for path, sha in note_entries(commit, glob, exclude):
        yield git.Blob(commit.repo, bytes.fromhex(sha), path=path)


def read_notes(
    commit: git.Commit,
    glob: str,
    exclude: list[str],
    known: Mapping[tuple[str, str], SourceNote] | None = None,
) -> list[SourceNote]:
    """Every note `note_entries` finds, with its title and access groups from the front matter.

    `known` holds notes read before by this same reader, keyed by (path, blob sha): their blobs are
    not read or parsed again (equal path and bytes give an equal note), so a build reads what changed."""
    notes: dict[str, SourceNote] = {}
    known = known or {}
    for path, sha in note_entries(commit, glob, exclude):
        slug = note_id(path)
        if slug in notes:
            raise NotesSourceError(f"note id {slug!r} is used by two files: {notes[slug].path} and {path}")
        if (path, sha) in known:
            notes[slug] = replace(known[path, sha], commit=commit.hexsha)
            continue
        try:
            raw = commit.repo.odb.stream(bytes.fromhex(sha)).read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotesSourceError(f"{path} at {commit.hexsha[:12]}: not UTF-8 ({exc})") from exc
        try:
            fields, _ = split_front_matter(raw)
        except FrontMatterError as exc:
            raise NotesSourceError(f"{path} at commit {commit.hexsha[:12]}: {exc}") from None
        title = title_of(fields, slug)
        access = access_groups(fields, f"{path} at commit {commit.hexsha[:12]}")
        notes[slug] = SourceNote(slug, path, commit.hexsha, sha, title, raw, access)
    if not notes:
        raise NotesSourceError(f"no file matches {glob!r} at commit {commit.hexsha[:12]}")
    return sorted(notes.values(), key=lambda n: n.note)


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
