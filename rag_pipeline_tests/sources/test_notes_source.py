import pytest

from rag_pipeline.lib.sources import (
    NotesSourceError,
    build_repository,
    glob_regex,
    read_notes,
    resolve_commit,
)
from rag_pipeline_tests.support.repos import commit_files


def test_glob():
    g = glob_regex("content/notes/**/index.md")
    assert g.match("content/notes/index.md")
    assert g.match("content/notes/db/deadlock/index.md")
    assert not g.match("content/posts/x/index.md")
    assert not glob_regex("*.md").match("a/b.md")


def test_reads_notes_from_the_commit_tree_not_the_checkout(notes_repo):
    first = notes_repo.head.commit.hexsha
    second = commit_files(
        notes_repo, {"content/notes/db/deadlock/index.md": '---\ntitle: "Deadlock 2"\n---\nnew\n'}, "edit"
    )
    old = read_notes(resolve_commit(notes_repo, first), "content/notes/**/index.md", ["_index.md"])
    new = read_notes(resolve_commit(notes_repo, second), "content/notes/**/index.md", ["_index.md"])
    assert [n.note for n in old] == ["columnar-storage", "deadlock", "tcp-handshake"]
    by_note = {n.note: n for n in new}
    assert by_note["deadlock"].title == "Deadlock 2" and by_note["deadlock"].commit == second
    old_by_note = {n.note: n for n in old}
    assert by_note["deadlock"].source_version != old_by_note["deadlock"].source_version
    assert by_note["tcp-handshake"].source_version == old_by_note["tcp-handshake"].source_version


def test_bad_ref_and_duplicate_slug_are_named(notes_repo):
    with pytest.raises(NotesSourceError, match="RAG_NOTES_REF=nope: names no commit of "):
        resolve_commit(notes_repo, "nope")
    sha = commit_files(notes_repo, {"content/notes/other/deadlock/index.md": "x"}, "dup")
    with pytest.raises(NotesSourceError, match="note id 'deadlock' is used by two files"):
        read_notes(resolve_commit(notes_repo, sha), "content/notes/**/index.md", [])
    with pytest.raises(NotesSourceError, match="no file matches"):
        read_notes(resolve_commit(notes_repo, sha), "docs/**/*.md", [])


def test_bundled_corpus_builds_with_stable_shas(tmp_path):
    from rag_pipeline.settings import BUNDLED_CORPUS

    a = build_repository(BUNDLED_CORPUS, tmp_path / "a")
    b = build_repository(BUNDLED_CORPUS, tmp_path / "b")
    assert a.head.commit.hexsha == b.head.commit.hexsha
    assert len(list(a.iter_commits())) == 2
    first, second = a.commit("HEAD~1"), a.head.commit
    changed = {d.b_path or d.a_path for d in first.diff(second)}
    assert len(changed) == 2  # one note edited, one added
    assert len(read_notes(second, "content/notes/**/index.md", ["_index.md"])) >= 20


def test_a_repository_url_is_mirrored_and_fetched(notes_repo, tmp_path):
    from rag_pipeline.lib.sources import open_repository

    url = f"file://{notes_repo.working_tree_dir}"
    mirror = open_repository(url, tmp_path / "git")
    assert mirror.bare and resolve_commit(mirror, "main").hexsha == notes_repo.head.commit.hexsha
    new = commit_files(
        notes_repo, {"content/notes/db/deadlock/index.md": "---\ntitle: D\n---\nnew\n"}, "edit"
    )
    assert resolve_commit(open_repository(url, tmp_path / "git"), "main").hexsha == new
