"""The loop of failures found in use, on a small real repository released through the `make run` path:
`ask` (processes at once, none of their records lost), `asks list` as each asker may read it, `asks
flag`, `gold from-asks` (personal data removed), a person's evidence, and the next run scoring the
asked question; a note restricted since withholds the records citing it."""

import json
import os
import re
import sys
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.cli import asks, gold
from rag_pipeline_tests.support.repos import NOTES, commit_files
from rag_pipeline_tests.support.runs import asked, at_once, make_run, project_definitions

TCP = "content/notes/net/tcp-handshake/index.md"
DEADLOCK = "content/notes/db/deadlock/index.md"
RECORDED = re.compile(r"recorded as (\S+);")


def restricted(path: str) -> str:
    return NOTES[path].replace("---\n", "---\naccess: [sre]\n", 1)


def listed(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    code = asks.main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.slow
def test_ask_flag_draft_confirm_run(small_env, notes_repo, questions_path, tmp_path, monkeypatch, capsys):
    commit_files(notes_repo, {TCP: restricted(TCP)}, "the TCP note is the SRE team's")
    env = small_env | {"RAG_STRATEGIES": "fixed-1000", "RAG_RETRIEVERS": "dense"}
    instance = dg.DagsterInstance.ephemeral()
    assert make_run(project_definitions(env), instance)[1].success
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    log = Path(env["RAG_DATA_DIR"]) / "asks"

    # three `ask` processes at once: three records, each whole
    command = [sys.executable, "-m", "rag_pipeline.ask", "デッドロックとは?"]
    outputs = at_once(command, [os.environ | env] * 3)
    ids = {RECORDED.search(out).group(1) for out in outputs}
    assert len(ids) == 3 and {p.stem for p in log.glob("*.json")} == ids

    code, out, _ = asked(monkeypatch, capsys, env, "中止されたトランザクションは何回再試行する?")
    public = RECORDED.search(out).group(1)
    question = "TCP の 3 つ目のメッセージはなぜ必要? mail me at ops.lead@example.com"
    code, out, _ = asked(monkeypatch, capsys, env, question, "--groups", "sre")
    sre = RECORDED.search(out).group(1)
    assert f"asks flag {sre} --groups sre --reason" in out

    code, out = listed(monkeypatch, capsys, "list")
    assert code == 0 and public in out and sre not in out and "4 record(s)" in out
    code, out = listed(monkeypatch, capsys, "list", "--groups", "sre", "--json")
    assert {r["id"] for r in json.loads(out)} == ids | {public, sre}
    code, out = listed(monkeypatch, capsys, "list", "--groups", "ser")
    assert code == 2 and "did you mean 'sre'" in out  # a typo is no group of its own

    code, out = listed(monkeypatch, capsys, "flag", sre, "--reason", "no answer given")
    assert code == 2 and "no record" in out  # a reader without its groups cannot flag it
    assert listed(monkeypatch, capsys, "flag", sre, "--groups", "sre", "--reason", "no answer given")[0] == 0
    assert listed(monkeypatch, capsys, "flag", public, "--reason", "the answer is: 3 times")[0] == 0
    code, out = listed(monkeypatch, capsys, "list", "--flagged", "--groups", "sre")
    assert "2 record(s)" in out and "flagged: no answer given" in out

    drafted = tmp_path / "asked.json"
    assert gold.main(["from-asks", "--out", str(drafted)]) == 0
    out = capsys.readouterr().out
    assert "2 candidate question(s)" in out and "personal data removed: 1 (1 e-mail address)" in out
    items = {item["x-ask"]: item for item in json.loads(drafted.read_text())}
    assert items.keys() == {public, sre} and items[sre]["groups"] == ["sre"] and items[public]["groups"] == []
    assert "@example.com" not in drafted.read_text() and "[email]" in items[sre]["q"]

    # merged before a person looked: the candidates wait, listed by `gold status`, scored by nobody
    assert gold.main(["from-asks", "--out", str(drafted), "--merge"]) == 0
    monkeypatch.setenv("RAG_QUESTIONS", str(drafted))
    assert gold.main(["status"]) == 0
    assert f"question ask-{sre} asked, needs its evidence (served: tcp-handshake" in capsys.readouterr().out
    # a person gives the sre one its evidence from the hints; the public one stays a candidate
    merged = json.loads(drafted.read_text())
    for item in merged:
        if item.get("x-ask") == sre:
            item |= {
                "slug": "tcp-handshake",
                "section": "Why three messages",
                "evidence": "unsure whether the client saw",
            }
    questions_path.write_text(json.dumps(merged, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("RAG_QUESTIONS", str(questions_path))
    # and the deadlock note is restricted meanwhile: the next run scores the asked question
    commit_files(notes_repo, {DEADLOCK: restricted(DEADLOCK)}, "the deadlock note too")
    assert make_run(project_definitions(env), instance)[1].success
    scored = pd.read_parquet(Path(env["RAG_DATA_DIR"]) / "notes" / "questions.parquet")
    row = scored[scored["question_id"] == f"ask-{sre}"].iloc[0]
    assert list(row["groups"]) == ["sre"] and row["answerable"] and row["gold_status"] == "ok"
    assert f"ask-{public}" not in set(scored["question_id"])

    # the records citing the deadlock note are withheld from a public reader at once
    code, out = listed(monkeypatch, capsys, "list")
    assert code == 0 and public not in out and "4 withheld" in out
