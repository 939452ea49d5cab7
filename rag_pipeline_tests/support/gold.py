"""A real git history for the gold-label tests: c1 the notes; c2 deadlock's SQLSTATE sentence edited and
kafka added; c3 tcp-handshake deleted and a line appended to deadlock."""

import git

from rag_pipeline.lib.questions import assess, parse_questions
from rag_pipeline_tests.support.repos import NOTES, commit_files, make_notes_repo

GLOB, EXCLUDE = "content/notes/**/index.md", ["_index.md"]
DEADLOCK = "content/notes/db/deadlock/index.md"
TCP = "content/notes/net/tcp-handshake/index.md"
KAFKA = "content/notes/queues/kafka/index.md"
OLD_SENTENCE = "中止された側には SQLSTATE 40P01 が返ります。"
NEW_SENTENCE = "中止された側には SQLSTATE 40P01 のエラーが返ります。"


def delete_files(repo: git.Repo, paths: list[str], message: str) -> str:
    repo.index.remove(paths, working_tree=True)
    actor = git.Actor("test", "test@example.invalid")
    return repo.index.commit(message, author=actor, committer=actor).hexsha


def make_history(root):
    repo = make_notes_repo(root / "notes", NOTES)
    c1 = repo.head.commit.hexsha
    edited = NOTES[DEADLOCK].replace(OLD_SENTENCE, NEW_SENTENCE)
    kafka = '---\ntitle: "Kafka"\n---\nA topic has 12 partitions by default here.\n'
    c2 = commit_files(repo, {DEADLOCK: edited, KAFKA: kafka}, "edit deadlock, add kafka")
    delete_files(repo, [TCP], "delete tcp-handshake")
    c3 = commit_files(repo, {DEADLOCK: edited + "再試行の回数は設定で変えられます。\n"}, "append to deadlock")
    return repo, c1, c2, c3


def labelled(items: list[dict], commit: str | None) -> list[dict]:
    return [item | {"commit": commit} if item.get("slug") and commit else dict(item) for item in items]


def run(repo, items, indexed):
    questions = parse_questions(items, "q.json")
    return assess(repo, questions, indexed, GLOB, EXCLUDE, "q.json")
