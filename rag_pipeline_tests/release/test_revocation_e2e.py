"""Revocation is immediate, through the `make run` path on a small real repository: a commit that
restricts a public note (or deletes one) is withheld from the live release as soon as its source step
has read it, whatever fails after (a broken questions file, an embedding server down, a release the
gate rejects); `ask` for a public asker prints none of the note, `python -m rag_pipeline.release` and
the `release` asset say that live was narrowed outside a release, and the next release carries the
change. Widening waits for the release.

The embedding server is the Ollama protocol stand-in of `fakes/ollama.py` (Ollama cannot be
installed here); the other runs use the in-process hashing embedder."""

import json
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from rag_pipeline.cli import release
from rag_pipeline.lib.embedding.factory import make_embedder
from rag_pipeline.lib.serving import open_live, search_rows
from rag_pipeline_tests.fakes.ollama import FakeOllama
from rag_pipeline_tests.support.repos import NOTES, QUESTIONS, commit_files
from rag_pipeline_tests.support.runs import asked, failed, make_run, materialize_all, project_definitions

TCP = "content/notes/net/tcp-handshake/index.md"
# every line of the note's text, and its slug: none may reach a public asker
TCP_TEXT = ("tcp-handshake", "three-way handshake", "SYN-ACK", "initial sequence number", "Why three")
ASKED = "Why does TCP need a third message?"


def restricted(text: str, groups: str = "[sre]") -> str:
    return text.replace('title: "TCP handshake"\n', f'title: "TCP handshake"\naccess: {groups}\n')


def fix(questions: Path) -> None:
    """The questions file repaired (other bytes than before it broke: a run that failed on a file
    is retried when it changes)."""
    questions.write_text(json.dumps(QUESTIONS, ensure_ascii=False, indent=1), encoding="utf-8")


def start(small_env: dict, extra: dict | None = None) -> tuple[dict, dg.DagsterInstance, Path]:
    """A first release of the small repository (the `notes_repo` and `questions_path` fixtures, as
    they are now): (env, instance, data directory)."""
    env = small_env | {"RAG_STRATEGIES": "fixed-1000", "RAG_RETRIEVERS": "dense"} | (extra or {})
    instance = dg.DagsterInstance.ephemeral()
    assert make_run(project_definitions(env), instance)[1].success
    return env, instance, Path(env["RAG_DATA_DIR"])


def public_sees_tcp(monkeypatch, capsys, env) -> bool:
    """Whether `ask` with no groups prints anything of the TCP note (k above every passage)."""
    code, out, err = asked(monkeypatch, capsys, env, ASKED, "--k", "20")
    assert code == 0, err
    return any(text in out for text in TCP_TEXT)


def live_notes(env, data: Path, groups) -> set[str]:
    """The notes a live search through `lib.serving` (`open_live`, `search_rows`) returns to `groups`."""
    vector = make_embedder("hashing").embed([ASKED], "query")[0]
    rows = search_rows(open_live(data, "fixed-1000"), np.asarray(vector), 50, groups, ["note"])
    return set(rows["note"].to_pylist())


def release_says(capsys) -> str:
    release.main()
    return capsys.readouterr().out


@pytest.mark.slow
def test_a_restriction_is_withheld_while_a_broken_questions_file_fails_the_run(
    small_env, notes_repo, questions_path, monkeypatch, capsys
):
    env, instance, data = start(small_env)
    repo, questions = notes_repo, questions_path
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    assert public_sees_tcp(monkeypatch, capsys, env)  # the check can see the note

    commit = commit_files(repo, {TCP: restricted(NOTES[TCP])}, "restrict the TCP note")
    questions.write_text("[{", encoding="utf-8")
    result = make_run(project_definitions(env), instance)[1]
    assert "questions" in failed(result) and "release" not in failed(result)
    assert not public_sees_tcp(monkeypatch, capsys, env)
    assert "tcp-handshake" not in live_notes(env, data, [])
    assert "tcp-handshake" in live_notes(env, data, ["sre"])  # its new group still reads it
    said = release_says(capsys)
    assert f"live narrowed outside a release by commit {commit[:12]}" in said
    assert "1 note(s) withheld until a release carries the change: tcp-handshake (sre only)" in said
    observed = instance.fetch_observations(dg.AssetKey("release"), limit=1).records[0]
    assert "tcp-handshake (sre only)" in observed.asset_observation.metadata["narrowed"].value

    # the questions fixed: a release carries the restriction, and nothing is withheld any more
    fix(questions)
    # as the UI's Materialize all (`make run` retrying a failed step is issue 42's first point)
    assert materialize_all(env, instance).success
    assert json.loads((data / "release" / "current.json").read_text())["commit"] == commit
    assert not (data / "release" / "revoked.json").exists()
    assert "narrowed" not in release_says(capsys)
    assert not public_sees_tcp(monkeypatch, capsys, env)
    make_run(project_definitions(env), instance)  # records the questions file as observed
    assert make_run(project_definitions(env), instance)[1] is None  # the observation stales nothing


@pytest.mark.slow
def test_a_deleted_note_is_withheld_from_everyone(small_env, notes_repo, monkeypatch, capsys):
    env, instance, data = start(small_env)
    notes_repo.index.remove([TCP], working_tree=True)
    notes_repo.index.commit("delete the TCP note")
    result = make_run(project_definitions(env), instance)[1]
    assert "questions" in failed(result)  # question 3 asks about the note: a bad label
    assert not public_sees_tcp(monkeypatch, capsys, env)
    assert "tcp-handshake" not in live_notes(env, data, None)  # no access rule, still gone
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    assert "tcp-handshake (nobody)" in release_says(capsys)
    # a record that cannot be read: no live search, one line
    (data / "release" / "revoked.json").write_text("{", encoding="utf-8")
    code, out, err = asked(monkeypatch, capsys, env, ASKED)
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith(f"error: {data / 'release' / 'revoked.json'} cannot be read (JSONDecodeError")


@pytest.mark.slow
def test_a_restriction_with_a_typo_stops_the_build_and_withholds_the_note(
    small_env, notes_repo, monkeypatch, capsys
):
    env, instance, data = start(small_env)
    commit_files(notes_repo, {TCP: restricted(NOTES[TCP]).replace("access:", "acess:")}, "a typo")
    result = make_run(project_definitions(env), instance)[1]
    assert failed(result) == ["source_notes"]
    assert not public_sees_tcp(monkeypatch, capsys, env)
    assert "tcp-handshake" not in live_notes(env, data, ["sre"])  # whose groups are unknown: nobody's
    assert "tcp-handshake (nobody)" in release_says(capsys)


@pytest.mark.slow
def test_a_restriction_is_withheld_while_the_embedding_server_is_down(
    small_env, notes_repo, monkeypatch, capsys
):
    with FakeOllama() as server:
        server.max_chars = 5000
        embedder = {"RAG_EMBEDDER": "ollama", "RAG_EMBED_URL": server.url, "RAG_EMBED_MODEL": "bge-m3"}
        env, instance, _ = start(small_env, embedder)
        deadlock = "content/notes/db/deadlock/index.md"
        edits = {TCP: restricted(NOTES[TCP]), deadlock: NOTES[deadlock] + "\n再試行の前にログを残します。\n"}
        commit_files(notes_repo, edits, "restrict the TCP note, edit another")
        server.faults = ["503"] * 1000  # down for the whole run
        result = make_run(project_definitions(env), instance)[1]
        assert not result.success and "release" not in failed(result)
        assert any(step.startswith("embeddings") for step in failed(result)), failed(result)
        server.faults = []  # back: `ask` embeds its question
        assert not public_sees_tcp(monkeypatch, capsys, env)


@pytest.mark.slow
def test_a_restriction_is_withheld_when_the_gate_rejects_the_release(
    small_env, notes_repo, questions_path, monkeypatch, capsys
):
    critical = [q | {"critical": True} if q["id"] == 1 else q for q in QUESTIONS]
    questions_path.write_text(json.dumps(critical, ensure_ascii=False), encoding="utf-8")
    env, instance, data = start(small_env)
    ranks = pd.read_parquet(data / "release" / "questions.parquet").set_index("question_id")
    assert ranks.loc["1", "first_evidence_rank"] <= 5
    # notes that echo question 1 push its evidence out of the top 5: a critical question newly missed
    echoes = {
        f"content/notes/echo-{i}/index.md": f'---\ntitle: "echo {i}"\n---\n{QUESTIONS[0]["q"]} {i}\n'
        for i in range(6)
    }
    commit_files(notes_repo, {TCP: restricted(NOTES[TCP])} | echoes, "restrict the TCP note, echo a question")
    result = make_run(project_definitions(env), instance)[1]
    assert failed(result) == ["release"]
    assert not public_sees_tcp(monkeypatch, capsys, env)
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    said = release_says(capsys)
    assert "last decision: rejected" in said and "tcp-handshake (sre only)" in said
    metadata = result.asset_materializations_for_node("release")[0].metadata
    assert metadata["live_withheld"].value == 1


@pytest.mark.slow
def test_widening_waits_for_a_release(small_env, notes_repo, questions_path, monkeypatch, capsys):
    commit_files(notes_repo, {TCP: restricted(NOTES[TCP])}, "the TCP note is for sre")
    env, instance, data = start(small_env)
    repo, questions = notes_repo, questions_path
    assert not public_sees_tcp(monkeypatch, capsys, env)
    commit_files(repo, {TCP: NOTES[TCP]}, "the TCP note is public again")
    questions.write_text("[{", encoding="utf-8")
    assert "questions" in failed(make_run(project_definitions(env), instance)[1])
    assert not public_sees_tcp(monkeypatch, capsys, env)  # live still serves it to sre only
    assert not (data / "release" / "revoked.json").exists()  # and nothing was narrowed

    # narrowed again, then widened, all before a release: still withheld until one
    commit_files(repo, {TCP: restricted(NOTES[TCP], "[payments]")}, "payments only")
    make_run(project_definitions(env), instance)
    assert "tcp-handshake" not in live_notes(env, data, ["sre"])
    commit_files(repo, {TCP: NOTES[TCP]}, "public again")
    make_run(project_definitions(env), instance)
    assert "tcp-handshake" not in live_notes(env, data, ["sre"])

    fix(questions)
    assert materialize_all(env, instance).success
    assert public_sees_tcp(monkeypatch, capsys, env)
