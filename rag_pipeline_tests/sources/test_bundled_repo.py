"""The bundled notes repository is built once and keeps its user's work (real git, a copy of the corpus)."""

import json
import shutil
from pathlib import Path

import git
import pytest

from rag_pipeline.lib.sources import BundledRepoError, build_repository, ensure_repository
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_QUESTIONS

NOTE = "content/notes/caching/cache-stampede/index.md"  # in base/ and revised in update/


@pytest.fixture
def corpus(tmp_path):
    shutil.copytree(BUNDLED_CORPUS, tmp_path / "corpus")
    return tmp_path / "corpus"


@pytest.fixture
def repo(corpus, tmp_path):
    return git.Repo(ensure_repository(corpus, tmp_path / "notes-repo"))


def shas(repo: git.Repo) -> list[str]:
    return [c.hexsha for c in reversed(list(repo.iter_commits("HEAD")))]


def corpus_note(corpus, folder: str = "update"):
    return next(p for p in (corpus / folder).rglob("index.md") if p.as_posix().endswith(NOTE))


def test_a_rebuild_gives_the_shas_the_questions_labels_name(tmp_path):
    labels = {q["commit"] for q in json.loads(BUNDLED_QUESTIONS.read_text()) if q.get("commit")}
    first_two = shas(build_repository(BUNDLED_CORPUS, tmp_path / "a"))
    assert len(first_two) == 2 and shas(build_repository(BUNDLED_CORPUS, tmp_path / "b")) == first_two
    assert labels and all(any(sha.startswith(label) for sha in first_two) for label in labels)


def test_a_corpus_edit_is_committed_on_top_and_the_history_is_kept(corpus, repo):
    before = shas(repo)
    note = corpus_note(corpus)
    note.write_text(note.read_text() + "\n追記。\n")
    ensure_repository(corpus, Path(repo.working_tree_dir))
    after = shas(repo)
    assert after[:2] == before and len(after) == 3
    assert (repo.head.commit.tree / NOTE).data_stream.read() == note.read_bytes()
    ensure_repository(corpus, Path(repo.working_tree_dir))
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
    with pytest.raises(BundledRepoError, match=rf"{NOTE} changed both in data/corpus/.*rm -rf"):
        ensure_repository(corpus, Path(repo.working_tree_dir))
    assert repo.head.commit.hexsha == head


def test_uncommitted_changes_stop_a_corpus_sync(corpus, repo):
    Path(repo.working_tree_dir, "draft.md").write_text("draft")
    note = corpus_note(corpus)
    note.write_text(note.read_text() + "\n追記。\n")
    with pytest.raises(BundledRepoError, match="has uncommitted changes"):
        ensure_repository(corpus, Path(repo.working_tree_dir))
    assert len(shas(repo)) == 2
