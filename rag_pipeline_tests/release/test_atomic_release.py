"""`release/current.json` is the one record of what is live: a release killed after writing it and
before moving every `live` tag is repaired by the next run, and `ask` answers from the versions it
names meanwhile; a `current.json` that is not JSON, lacks a key, holds a wrong type, is missing or
names a table version that does not exist makes `release` stale, and `ask` and
`python -m rag_pipeline.release` refuse it with one line. On the small repository, through the
`make run` path, with the hashing embedder."""

import json
import re
from pathlib import Path

import dagster as dg
import lancedb
import pytest

from rag_pipeline.cli import release
from rag_pipeline.lib.release import verify_release
from rag_pipeline.lib.serving import live_version, tag_live
from rag_pipeline_tests.support.repos import commit_files
from rag_pipeline_tests.support.runs import asked, make_run, project_definitions, run_all
from rag_pipeline_tests.support.served import open_table

SHOWN = re.compile(r"^live (\S+) \(commit ([0-9a-f]{12}), table version (\d+)\)", re.M)
SERVED = {"fixed-1000": "fixed_1000", "section": "section"}
NEW_NOTE = """---
title: "Retry budget"
---
再試行の予算は 1 分あたり 20 回までです。

### 予算を超えたとき
予算を超えた要求はすぐに失敗させ、呼び出し側に 429 を返します。
"""


class Killed(Exception):
    """The worker dies: raised from inside LanceDB's tag update, as a kill at that point would stop it."""


@pytest.fixture
def released(small_env, notes_repo):
    """A first release of the small repository: (env, instance, notes repo, data directory)."""
    env = small_env | {"RAG_STRATEGIES": "fixed-1000,section", "RAG_RETRIEVERS": "dense"}
    instance = dg.DagsterInstance.ephemeral()
    assert make_run(project_definitions(env), instance)[1].success
    return env, instance, notes_repo, Path(env["RAG_DATA_DIR"])


def current(data: Path) -> dict:
    return json.loads((data / "release" / "current.json").read_text())


def tags(data: Path) -> dict[str, int | None]:
    return {table: live_version(open_table(data / "lancedb", table)) for table in SERVED.values()}


def shown(monkeypatch, capsys, env: dict, strategy: str) -> tuple[str, int]:
    """The commit and table version `ask` says it answers from."""
    code, out, err = asked(monkeypatch, capsys, env, "デッドロックとは?", "--strategy", strategy)
    assert code == 0, err
    _, commit, version = SHOWN.search(out).groups()
    return commit, int(version)


def answers_from_current(monkeypatch, capsys, env: dict, data: Path) -> None:
    """`ask` names the commit and, beside it, the table version of one release: current.json's."""
    live = current(data)
    for strategy, table in SERVED.items():
        assert shown(monkeypatch, capsys, env, strategy) == (
            live["commit"][:12],
            live["table_versions"][table],
        )


def dying_after_one(original):
    moved = []

    def move(self, *args, **kwargs):
        if moved:
            raise Killed("the worker was killed after moving the first table's tag")
        moved.append(args)
        return original(self, *args, **kwargs)

    return move


@pytest.mark.slow
def test_a_release_killed_between_current_json_and_the_tags_is_repaired(released, monkeypatch, capsys):
    env, instance, repo, data = released
    first = current(data)
    new_commit = commit_files(repo, {"content/notes/retry/index.md": NEW_NOTE}, "a new note")
    with monkeypatch.context() as m:
        m.setattr(lancedb.table.Tags, "update", dying_after_one(lancedb.table.Tags.update))
        result = make_run(project_definitions(env), instance)[1]
    assert not result.success
    assert [e.step_key for e in result.all_events if e.is_step_failure] == ["release"]

    # one tag moved, the other did not; ask answers from the versions current.json names, beside its
    # commit, and current.json names the new release (it was written first)
    live = current(data)
    assert tags(data) != live["table_versions"]
    answers_from_current(monkeypatch, capsys, env, data)
    assert live["commit"] == new_commit and live["previous_commit"] == first["commit"]
    assert "tag 'live' is on version" in verify_release(data)

    # the next run repairs it
    found, result = make_run(project_definitions(env), instance)
    assert "release" in found.names() and result.success
    assert verify_release(data) is None
    repaired = current(data)
    assert tags(data) == repaired["table_versions"] == live["table_versions"]
    assert repaired["commit"] == new_commit and repaired["previous_commit"] == first["commit"]
    answers_from_current(monkeypatch, capsys, env, data)


def drop_key(path: Path) -> None:
    state = json.loads(path.read_text())
    del state["table_versions"]
    path.write_text(json.dumps(state))


def set_value(key: str, value: object):
    def write(path: Path) -> None:
        state = json.loads(path.read_text())
        state[key] = value(state[key]) if callable(value) else value
        path.write_text(json.dumps(state))

    return write


# (how current.json is damaged, what the one line says)
DAMAGES = [
    (lambda path: path.write_text('{"decision": "released", "commit": '), "is not valid JSON"),
    (lambda path: path.write_text("[]"), "is not a JSON object"),
    (drop_key, "lacks table_versions"),
    (set_value("k", "five"), "the value of k has the wrong type"),
    (
        set_value("table_versions", lambda v: v | {"fixed_1000": 999}),
        "names fixed_1000 version 999, which does not exist",
    ),
    (lambda path: path.unlink(), "current.json is missing"),
]


@pytest.mark.slow
def test_a_damaged_current_json_is_refused_and_released_again(released, monkeypatch, capsys):
    env, instance, _, data = released
    path = data / "release" / "current.json"
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    for damage, says in DAMAGES:
        damage(path)
        assert says in verify_release(data)

        # ask and the release command: one line naming the file and what to do, exit 2
        code, out, err = asked(monkeypatch, capsys, env, "デッドロックとは?")
        assert (code, out) == (2, "")
        assert err.startswith(f"error: {path}") and says in err, err
        assert err.endswith("; run `make run` to release again\n") and err.count("\n") == 1, err
        assert release.main() == 2
        out, err_release = capsys.readouterr()
        assert (out, err_release) == ("", err)

        # release is stale, and the next run releases again
        found, result = make_run(project_definitions(env), instance)
        assert found.names() == ["release"]  # its outputs_intact check failed, with the same words
        assert found.requested[dg.AssetKey("release")] == ["an output is missing or damaged"]
        assert result.success
        checked = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
        assert {"release_gate", "live_release"} <= set(checked) and all(checked.values()), checked
        assert verify_release(data) is None
        assert tags(data) == current(data)["table_versions"]
        answers_from_current(monkeypatch, capsys, env, data)

    # a tag moved by hand: ask still answers from current.json, and the next run moves it back
    live = current(data)
    tag_live(open_table(data / "lancedb", "section"), live["table_versions"]["section"] - 1)
    assert "table section: tag 'live' is on version" in verify_release(data)
    answers_from_current(monkeypatch, capsys, env, data)
    found, result = make_run(project_definitions(env), instance)
    assert found.names() == ["release"] and result.success
    assert tags(data) == current(data)["table_versions"]


def test_the_live_release_check_runs_on_its_own(released):
    env, instance, _, data = released
    (data / "release" / "current.json").write_text("not json")
    check = dg.AssetCheckKey(dg.AssetKey("release"), "live_release")
    result = run_all(env, instance=instance, selection=dg.AssetSelection.checks(check), raise_on_error=False)
    (evaluation,) = result.get_asset_check_evaluations()
    assert not evaluation.passed and "is not valid JSON" in evaluation.metadata["reason"].value
