"""The release gate on the bundled corpus, through the `make run` path: a first release, a rejected one
after an embedding server starts returning noise (the live version stays, and `ask` answers from it),
a release after the fix (the tag moves), a leak injected into a retrieval result, a critical question
newly missed; and `ask` before any release, with and without groups.

The noise server is the Ollama protocol stand-in on 127.0.0.1 (Ollama cannot be installed here): its
vectors are hashes of the texts, so they carry no meaning."""

import json
import re
import shutil

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rag_pipeline.cli import release, show_report
from rag_pipeline.lib.core import may_read
from rag_pipeline.lib.serving import live_version
from rag_pipeline.lib.sources.bundled_repo import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_QUESTIONS
from rag_pipeline_tests.fakes.ollama import FakeOllama
from rag_pipeline_tests.support.repos import commit_files
from rag_pipeline_tests.support.runs import asked, hashing_env, make_run, project_definitions
from rag_pipeline_tests.support.served import open_table

PASSAGE = re.compile(r"^\s+\[\d+\] (\S+) > ", re.M)


def failed_steps(result) -> list[str]:
    return [e.step_key for e in result.all_events if e.is_step_failure]


def last_decision(data) -> pd.Series:
    return pd.read_parquet(data / "release" / "history.parquet").iloc[-1]


def current(data) -> dict:
    return json.loads((data / "release" / "current.json").read_text())


@pytest.mark.slow
def test_release_gate_on_the_bundled_corpus(tmp_path, monkeypatch, capsys):
    repo = build_repository(BUNDLED_CORPUS, tmp_path / "notes")
    questions_path = tmp_path / "questions.json"
    shutil.copy(BUNDLED_QUESTIONS, questions_path)
    data = tmp_path / "data"
    env = hashing_env(tmp_path / "notes", questions_path, "fixed-1000", "dense", RAG_DATA_DIR=str(data))
    instance = dg.DagsterInstance.ephemeral()

    code, _, err = asked(monkeypatch, capsys, env, "WAL とは?")
    assert code == 2 and "nothing is released yet" in err
    assert release.main() == 2 and "no release decision yet" in capsys.readouterr().err

    # a first release: the absolute checks only
    assert make_run(project_definitions(env), instance)[1].success
    first = current(data)
    assert first["decision"] == "released" and first["previous_commit"] is None
    assert live_version(open_table(data / "lancedb", "fixed_1000")) == first["table_versions"]["fixed_1000"]
    # make run's last lines: what is served, and what to do next
    assert show_report.main() == 0
    out = capsys.readouterr().out
    assert "served: fixed-1000/dense (the baseline)" in out or "served: fixed-1000/dense (the best" in out
    # each command acts on this build: its notes, questions and data directory are not make run's
    # (every setting that differs from its default: the ask line too)
    asking = next(line for line in out.splitlines() if "-m rag_pipeline.ask " in line)
    assert f"RAG_DATA_DIR={data} " in asking and "RAG_EMBEDDER=hashing " in asking
    assert f"RAG_NOTES_REPO={tmp_path / 'notes'} " in out and f"RAG_DATA_DIR={data} " in out

    access = dict(pd.read_parquet(data / "notes" / "source_notes.parquet", columns=["note", "access"]).values)
    for groups in ([], ["sre"], ["payments"]):
        code, out, _ = asked(
            monkeypatch, capsys, env, "障害対応の手順と連絡先は?", "--groups", ",".join(groups), "--k", "10"
        )
        shown = PASSAGE.findall(out)
        assert code == 0 and len(shown) == 10
        assert all(may_read(groups, access[note]) for note in shown), (groups, shown)
    restricted = {note for note, groups in access.items() if len(groups)}
    code, out, _ = asked(monkeypatch, capsys, env, "決済の障害対応は?", "--groups", "payments", "--k", "20")
    assert set(PASSAGE.findall(out)) & restricted  # a group reader does see its restricted notes

    # the embedding server returns noise: recall collapses, the release is rejected, live stays
    with FakeOllama() as server:
        server.max_chars = 100_000
        noisy = env | {"RAG_EMBEDDER": "ollama", "RAG_EMBED_URL": server.url, "RAG_EMBED_MODEL": "bge-m3"}
        result = make_run(project_definitions(noisy), instance)[1]
    assert not result.success and failed_steps(result) == ["release"]
    rejected = last_decision(data)
    assert rejected["decision"] == "rejected" and "evidence recall@k dropped" in rejected["reasons"][0]
    assert current(data) == first
    table = open_table(data / "lancedb", "fixed_1000")
    assert table.version > first["table_versions"]["fixed_1000"]
    assert live_version(table) == first["table_versions"]["fixed_1000"]
    assert release.main() == 1
    assert "last decision: rejected" in capsys.readouterr().out
    code, out, _ = asked(monkeypatch, capsys, env, "WAL を使うと書き込みが速くなるのはなぜですか?")
    assert code == 0 and f"table version {first['table_versions']['fixed_1000']}" in out
    code, _, err = asked(monkeypatch, capsys, noisy, "WAL とは?")
    assert code == 2 and "ollama" in err and "hashing" in err  # the configured embedder is not the live one

    # the fix: back to the embedder of the last release; the tag moves to the new version
    assert make_run(project_definitions(env), instance)[1].success
    fixed = current(data)
    assert fixed["previous_commit"] == first["commit"]
    assert fixed["table_versions"]["fixed_1000"] > first["table_versions"]["fixed_1000"]
    assert live_version(open_table(data / "lancedb", "fixed_1000")) == fixed["table_versions"]["fixed_1000"]
    assert release.main() == 0
    capsys.readouterr()

    # a leak injected into a retrieval result (release re-decides under another RAG_RELEASE_K)
    path = data / "retrieval" / "fixed-1000.parquet"
    original = pq.read_table(path)
    rows = original.to_pandas()
    chunks = pd.read_parquet(data / "chunks" / "fixed-1000.parquet")
    asker = pd.read_parquet(data / "notes" / "questions.parquet")
    asker = asker[asker["groups"].notna()].iloc[0]
    forbidden = chunks[[not may_read(list(asker["groups"]), a) for a in chunks["access"]]].iloc[0]
    leak = rows[rows["question_id"] == asker["question_id"]].iloc[[0]].copy()
    leak = leak.assign(
        chunk_id=forbidden["chunk_id"], note=forbidden["note"], access=[list(forbidden["access"])]
    )
    tampered = pd.concat([rows, leak], ignore_index=True)
    pq.write_table(pa.Table.from_pandas(tampered, schema=original.schema, preserve_index=False), path)
    result = make_run(project_definitions(env | {"RAG_RELEASE_K": "4"}), instance)[1]
    assert failed_steps(result) == ["release"]
    assert last_decision(data)["reasons"][0].startswith("retrieval: 1 unit(s) leaked")
    assert current(data) == fixed
    pq.write_table(original, path)

    # a critical question newly missed: notes that echo its text push its evidence out of the top 5
    assert make_run(project_definitions(env), instance)[1].success
    before = current(data)
    found = pd.read_parquet(data / "release" / "questions.parquet")
    items = json.loads(questions_path.read_text())
    by_id = {str(item["id"]): item for item in items}
    target = next(
        q
        for q in found.itertuples()
        if q.first_evidence_rank == 1 and by_id[q.question_id].get("groups") is None
    )
    by_id[target.question_id]["critical"] = True
    questions_path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    text = by_id[target.question_id]["q"]
    echoes = {
        f"content/notes/echo-{i}/index.md": f'---\ntitle: "echo {i}"\n---\n{text}\n\n{text} {i}\n'
        for i in range(6)
    }
    commit_files(repo, echoes, "notes that echo one question")
    result = make_run(project_definitions(env), instance)[1]
    assert failed_steps(result) == ["release"]
    decision = last_decision(data)
    assert (
        f"critical question(s) {target.question_id} found by the last release, now missed"
        in decision["reasons"]
    )
    assert target.question_id in list(decision["newly_missed"])
    assert current(data) == before
    assert live_version(open_table(data / "lancedb", "fixed_1000")) == before["table_versions"]["fixed_1000"]
