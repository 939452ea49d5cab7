"""The bundled notes repository is built once and keeps its user's work (real git, a copy of the corpus)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

from rag_pipeline.lib.sources import (
    BundledRepoError,
    NotesSourceError,
    build_repository,
    ensure_repository,
    readable_repository,
    would_sync,
)
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_QUESTIONS

NOTE = "content/notes/caching/cache-stampede/index.md"  # in base/ and revised in update/


@pytest.fixture
def corpus(tmp_path):
    shutil.copytree(BUNDLED_CORPUS, tmp_path / "corpus")
    return tmp_path / "corpus"


@pytest.fixture
def repo(corpus, tmp_path):
    ensure_repository(corpus, tmp_path / "notes-repo")
    return git.Repo(tmp_path / "notes-repo")


def shas(repo: git.Repo) -> list[str]:
    return [c.hexsha for c in reversed(list(repo.iter_commits("HEAD")))]


def corpus_note(corpus, folder: str = "update", note: str = NOTE):
    return next(p for p in (corpus / folder).rglob("index.md") if p.as_posix().endswith(note))


def other_note(corpus) -> str:
    """A note of base/ that update/ leaves alone."""
    return next(
        p.relative_to(corpus / "base").as_posix()
        for p in sorted((corpus / "base").rglob("index.md"))
        if not p.as_posix().endswith(NOTE)
    )


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def at_head(repo: git.Repo, path: str) -> bytes:
    return (repo.head.commit.tree / path).data_stream.read()


def test_a_rebuild_gives_the_shas_the_questions_labels_name(tmp_path):
    labels = {q["commit"] for q in json.loads(BUNDLED_QUESTIONS.read_text()) if q.get("commit")}
    first_two = shas(build_repository(BUNDLED_CORPUS, tmp_path / "a"))
    assert len(first_two) == 2 and shas(build_repository(BUNDLED_CORPUS, tmp_path / "b")) == first_two
    assert labels and all(any(sha.startswith(label) for sha in first_two) for label in labels)


def test_a_corpus_edit_is_committed_on_top_and_the_history_is_kept(corpus, repo):
    before = shas(repo)
    note = corpus_note(corpus)
    note.write_text(note.read_text() + "\n追記。\n")
    said = ensure_repository(corpus, Path(repo.working_tree_dir))
    after = shas(repo)
    assert said == f"applied 1 edit of {corpus}/ as commit {after[2][:12]}: {NOTE}"
    assert after[:2] == before and len(after) == 3
    assert (repo.head.commit.tree / NOTE).data_stream.read() == note.read_bytes()
    assert ensure_repository(corpus, Path(repo.working_tree_dir)) is None
    assert shas(repo) == after  # nothing new: no commit


def commit_in_repo(repo: git.Repo, path: str, text: str) -> str:
    """A commit the user makes in the built repository, under their own name."""
    target = Path(repo.working_tree_dir, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    repo.index.add([path])
    me = git.Actor("A User", "user@example.com")
    return repo.index.commit("my note", author=me, committer=me).hexsha


def test_a_users_commit_survives_a_corpus_edit(corpus, repo):
    mine = commit_in_repo(repo, "content/notes/mine/x/index.md", "---\ntitle: Mine\n---\n私のメモ。\n")
    note = corpus_note(corpus)
    note.write_text(note.read_text() + "\n追記。\n")
    ensure_repository(corpus, Path(repo.working_tree_dir))
    assert repo.head.commit.parents[0].hexsha == mine
    tree = repo.head.commit.tree
    assert (tree / "content/notes/mine/x/index.md").data_stream.read().decode().endswith("私のメモ。\n")
    assert (tree / NOTE).data_stream.read() == note.read_bytes()


def test_a_note_deleted_from_the_corpus_is_deleted_by_a_commit(corpus, repo):
    gone = next(p for p in (corpus / "update").rglob("index.md") if not p.as_posix().endswith(NOTE))
    path = gone.relative_to(corpus / "update").as_posix()
    gone.unlink()
    ensure_repository(corpus, Path(repo.working_tree_dir))
    assert path not in {b.path for b in repo.head.commit.tree.traverse()}
    assert not Path(repo.working_tree_dir, path).exists() and len(shas(repo)) == 3


def test_an_edit_in_both_places_stops_with_how_to_rebuild(corpus, repo):
    commit_in_repo(repo, NOTE, "---\ntitle: mine\n---\nmine\n")
    head = repo.head.commit.hexsha
    note = corpus_note(corpus)
    note.write_text(note.read_text() + "\n追記。\n")
    with pytest.raises(
        BundledRepoError, match=rf"{NOTE} changed both in {corpus}/ and in commit .* \(my note\).*rm -rf"
    ):
        ensure_repository(corpus, Path(repo.working_tree_dir))
    assert repo.head.commit.hexsha == head


def test_uncommitted_changes_stop_a_corpus_sync(corpus, repo):
    Path(repo.working_tree_dir, "draft.md").write_text("draft")
    note = corpus_note(corpus)
    note.write_text(note.read_text() + "\n追記。\n")
    with pytest.raises(BundledRepoError, match="has uncommitted changes"):
        ensure_repository(corpus, Path(repo.working_tree_dir))
    assert len(shas(repo)) == 2


def test_a_users_commit_stops_every_later_corpus_edit_of_its_note(corpus, repo):
    """The user commits one note; a corpus edit of another note is applied; then a corpus edit of the
    committed note stops the sync naming it, as often as it is tried, and HEAD keeps the user's text."""
    where = Path(repo.working_tree_dir)
    commit_in_repo(repo, NOTE, "---\ntitle: mine\n---\n私の版。\n")
    mine = at_head(repo, NOTE)
    other = other_note(corpus)
    append(corpus / "base" / other, "\nコーパスの追記。\n")
    assert ensure_repository(corpus, where).startswith(f"applied 1 edit of {corpus}/ as commit ")
    assert at_head(repo, other) == (corpus / "base" / other).read_bytes() and at_head(repo, NOTE) == mine
    append(corpus_note(corpus), "\n追記。\n")
    head = repo.head.commit.hexsha
    for _ in range(2):
        with pytest.raises(BundledRepoError) as caught:
            ensure_repository(corpus, where)
        assert str(caught.value).startswith(f"{NOTE} changed both in {corpus}/ and in commit ")
        assert "\n" not in str(caught.value) and isinstance(caught.value, NotesSourceError)
        assert repo.head.commit.hexsha == head and at_head(repo, NOTE) == mine
    assert not repo.is_dirty(untracked_files=True)


def test_a_sync_after_a_sync_leaves_the_users_note_alone(corpus, repo):
    """Two corpus edits of other notes after the user's commit: neither puts the corpus's text of the
    user's note back."""
    where = Path(repo.working_tree_dir)
    commit_in_repo(repo, NOTE, "---\ntitle: mine\n---\n私の版。\n")
    mine = at_head(repo, NOTE)
    other = other_note(corpus)
    for n in range(2):
        append(corpus / "base" / other, f"\n追記 {n}。\n")
        assert ensure_repository(corpus, where).endswith(f": {other}")
        assert at_head(repo, NOTE) == mine
    assert len(shas(repo)) == 5


def test_would_sync_says_what_a_sync_would_do_and_writes_nothing(corpus, repo, tmp_path):
    where = Path(repo.working_tree_dir)
    assert would_sync(corpus, where) is None
    note = corpus_note(corpus)
    append(note, "\n追記。\n")
    stamp = (where / ".git" / "rag-corpus-stamp").read_text()
    head = repo.head.commit.hexsha
    assert (
        would_sync(corpus, where)
        == f"would apply 1 edit of {corpus}/ as a commit on top of {head[:12]}: {NOTE}"
    )
    assert repo.head.commit.hexsha == head and not repo.is_dirty(untracked_files=True)
    assert (where / ".git" / "rag-corpus-stamp").read_text() == stamp
    commit_in_repo(repo, NOTE, "mine\n")
    with pytest.raises(BundledRepoError, match="changed both"):
        would_sync(corpus, where)  # a plan stops where the run would
    missing = tmp_path / "not-built"
    assert would_sync(corpus, missing).startswith(f"would build {missing} from {corpus}/")
    assert not missing.exists()


def test_an_unbuilt_repository_is_read_from_a_temporary_build(corpus, tmp_path):
    dest = tmp_path / "notes-repo"
    read = readable_repository(corpus, dest)
    assert not dest.exists() and read != dest
    assert shas(git.Repo(read)) == shas(build_repository(corpus, tmp_path / "built"))
    assert readable_repository(corpus, dest) == read  # built once per process
    ensure_repository(corpus, dest)
    assert readable_repository(corpus, dest) == dest


def test_the_sources_command_says_what_it_did_and_stops_in_one_line(corpus, repo, tmp_path):
    def sources():
        command = [sys.executable, "-m", "rag_pipeline.lib.sources", str(corpus), repo.working_tree_dir]
        return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=os.environ)

    done = sources()
    assert done.returncode == 0 and done.stdout == "notes-repo: up to date with corpus/\n"
    commit_in_repo(repo, NOTE, "mine\n")
    append(corpus_note(corpus), "\n追記。\n")
    done = sources()
    assert done.returncode == 2 and not done.stdout and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"error: {NOTE} changed both in corpus/ and in commit ")
