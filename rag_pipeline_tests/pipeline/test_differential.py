"""Incremental equals from scratch: a seeded random sequence of changes (notes added, edited, deleted,
renamed, restricted or opened; the questions file edited, a question's split among it; people's labels
added; settings changed, RAG_TEST_SHARE and RAG_SHARDS among them; outputs deleted, damaged or given a
duplicate row by hand), each followed by the `make run` path, must leave every report Parquet (`judged_summary.parquet`
among them), `answers.parquet`, `judgments.parquet`, `judged_items.parquet`, every configured served
table and the current experiment's outcomes and judged outcomes exactly as a fresh build of the same
state gives them, in one run; the release must judge the same candidate (and, when it releases, serve
the same rows as live), and no prompt that reaches the chat server, the answerer's or the judge's, may
hold text of a note its asker may not read.

A step may first run `make run` with a fault injected at a random point (`support/faults.py`: a step
that raises, a full disk, the chat server down, `kill -9` of the run): then `ask` for a public asker
must show no text of a note restricted now, and, the fault taken away, the next `make run` must leave
everything as a fresh build does.

CI runs 24 steps of one seed, about one in three with a fault. A longer sequence on demand (a failure
prints the seed and the step):
    RAG_DIFF_SEED=7 RAG_DIFF_STEPS=200 RAG_DIFF_FAULTS=0.5 .venv/bin/python -m pytest rag_pipeline_tests/pipeline/test_differential.py
The chat server, answerer and judge at once, is a protocol stand-in on 127.0.0.1 (no LLM installs
here): see fakes/llm.py and fakes/judge.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rag_pipeline.cli import ask
from rag_pipeline.lib.serving import open_live
from rag_pipeline_tests.fakes.judge import FakeJudge
from rag_pipeline_tests.support import damage
from rag_pipeline_tests.support.faults import FOLDERS, KINDS, failing_writes, killed_run, outage
from rag_pipeline_tests.support.runs import failed, make_run, materialize_all, project_definitions
from rag_pipeline_tests.support.served import open_table
from rag_pipeline_tests.support.world import WORDS, World

# measured, not computed: latencies, and the LanceDB version a table reached by its own history
MEASURED = {
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p50_s",
    "latency_p95_s",
    "latency_s",
    "table_version",
}
SEED = int(os.environ.get("RAG_DIFF_SEED", "19"))
STEPS = int(os.environ.get("RAG_DIFF_STEPS", "24"))
# besides the random ones, every sequence has a failed blocking check (`outputs_intact` on a Parquet
# file cut short) and a duplicate chunk_id injected into a served table, both to be rebuilt, the
# inputs of the dev and test split (a question's own `split` and RAG_TEST_SHARE), and shards
FORCED = {
    3: damage.damage_output,
    6: damage.duplicate_served_row,
    12: lambda world, data: world.forced(world.split_question),
    15: lambda world, data: world.forced(world.toggle_test_share),
    # and each lane's notes in shards (RAG_SHARDS) for the rest of the sequence
    18: lambda world, data: world.forced(world.toggle_shards),
}
# and a run `make run` never evaluated (the UI's *Materialize all*) just before a change: Dagster's
# edge-triggered conditions lost such a change (the assets' own updates reset them)
UI_RUN_BEFORE = 9
FAULTS = float(os.environ.get("RAG_DIFF_FAULTS", "0.35"))  # the share of steps with a fault first


def frame(path: Path) -> tuple[pd.DataFrame, dict]:
    table = pq.read_table(path)
    data = table.to_pandas()
    return data.drop(columns=[c for c in data.columns if c in MEASURED]), dict(table.schema.metadata or {})


def served(data: Path, strategy: str) -> pd.DataFrame:
    rows = open_table(data / "lancedb", strategy.replace("-", "_")).lance.to_arrow().to_pandas()
    rows["vector"] = rows["vector"].map(list)
    rows["access"] = rows["access"].map(list)
    return rows.sort_values("chunk_id").reset_index(drop=True)


def assert_same(incremental: Path, scratch: Path, strategies: list[str], where: str) -> None:
    names = sorted(p.name for p in (scratch / "reports").glob("*.parquet"))
    assert sorted(p.name for p in (incremental / "reports").glob("*.parquet")) == names, where
    answers = [Path("answers") / n for n in ("answers.parquet", "judgments.parquet", "judged_items.parquet")]
    for path in [*(Path("reports") / n for n in names), *answers]:
        got, got_meta = frame(incremental / path)
        want, want_meta = frame(scratch / path)
        assert got_meta == want_meta, f"{where}: {path} schema metadata"
        pd.testing.assert_frame_equal(got, want, obj=f"{where}: {path}")
    plots = sorted(p.name for p in (scratch / "reports").glob("*.png"))
    assert sorted(p.name for p in (incremental / "reports").glob("*.png")) == plots, where
    for name in plots:  # kept plots (not drawn again) are the bytes a fresh build draws
        got, want = ((d / "reports" / name).read_bytes() for d in (incremental, scratch))
        assert got == want, f"{where}: reports/{name}"
    for strategy in strategies:
        pd.testing.assert_frame_equal(
            served(incremental, strategy), served(scratch, strategy), obj=f"{where}: table {strategy}"
        )
    # the experiment ledger is history (an incremental build's holds every state it went through), so
    # only the current experiment is compared: the same id, the same per-question outcomes
    ids = [json.loads((d / "experiments" / "current.json").read_text())["id"] for d in (incremental, scratch)]
    assert ids[0] == ids[1], f"{where}: experiment {ids[0]} (incremental) != {ids[1]} (fresh)"
    for name in ("outcomes.parquet", "judged.parquet"):
        outcomes = Path("experiments") / ids[0] / name
        pd.testing.assert_frame_equal(
            frame(incremental / outcomes)[0], frame(scratch / outcomes)[0], obj=f"{where}: {outcomes}"
        )


def decisions(data: Path) -> pd.DataFrame:
    return pd.read_parquet(data / "release" / "history.parquet")


def assert_same_release(incremental: Path, scratch: Path, result, where: str) -> None:
    """The release judged the same candidate as a fresh build did (commit, run, recall). A fresh
    build has no last release to compare with: it applies the absolute checks only, so the
    incremental decision may differ from it only by a comparison with its own last release."""
    fresh, last = decisions(scratch).iloc[-1], decisions(incremental).iloc[-1]
    assert fresh["decision"] == "released", f"{where}: a fresh build is rejected: {list(fresh['reasons'])}"
    assert (last["commit"], last["run"]) == (fresh["commit"], fresh["run"]), where
    assert last["recall"] == fresh["recall"] or (pd.isna(last["recall"]) and pd.isna(fresh["recall"])), where
    absolute = ("retrieval:", "served table", "strategy ", "the release run")
    assert not [r for r in last["reasons"] if r.startswith(absolute)], f"{where}: {list(last['reasons'])}"
    if last["decision"] == "released":
        served = json.loads((scratch / "release" / "current.json").read_text())["table_versions"]
        for table in served:
            assert live_rows(incremental, table).equals(live_rows(scratch, table)), f"{where}: live {table}"
    elif result is not None:
        assert failed(result) == ["release"], where


def live_rows(data: Path, table: str) -> pd.DataFrame:
    rows = open_live(data, table).table.read(["chunk_id", "text", "access"]).to_pandas()
    rows["access"] = rows["access"].map(list)
    return rows.sort_values("chunk_id").reset_index(drop=True)


def leaks(world: World, prompts: list[str]) -> list[str]:
    """Prompts holding a marker of a note their asker may not read."""
    found = []
    for prompt in prompts:
        asker = next((q for q in world.questions if f"[Q{q['id']}]" in prompt), None)
        if asker is None or asker["groups"] is None:
            continue
        for note in world.notes.values():
            access = world.access(note)
            if access and not set(access) & set(asker["groups"]) and note.marker() in prompt:
                found.append(f"question {asker['id']} ({asker['groups']}) was shown {note.slug} ({access})")
    return found


def faulted(env: dict, home: Path, rng: random.Random, instance, llm) -> str:
    """One `make run` with a fault at a random point; what it was."""
    kind, folder = rng.choice(KINDS), rng.choice(FOLDERS)
    if kind == "kill":
        return killed_run(env, home, rng, instance)
    data = Path(env["RAG_DATA_DIR"])
    # the definitions first: built under the patched writer, their code versions would name it
    defs = project_definitions(env)
    with outage(llm) if kind == "outage" else failing_writes(data, folder, disk=kind == "disk"):
        _, result = make_run(defs, instance)
    what = kind if kind == "outage" else f"{kind} writing {folder}/"
    return what + (" (not reached)" if result is None or result.success else "")


def public_leaks(world: World, env: dict) -> list[str]:
    """The notes restricted now whose text `ask` shows a public asker (no groups)."""
    out = io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(out),
    ):
        for name, value in env.items():
            patch.setenv(name, value)
        ask.main([" ".join(WORDS), "--k", "20"])
    shown = out.getvalue()
    return [n.slug for n in world.notes.values() if world.access(n) and n.marker() in shown]


@pytest.mark.slow
def test_incremental_runs_equal_fresh_builds(tmp_path):
    rng, fault_rng = random.Random(SEED), random.Random(SEED * 7919)  # faults leave the changes as they were
    with FakeJudge(yes=0.7, invalid=0.05) as llm:
        world = World(tmp_path, rng, llm.url)
        data = tmp_path / "incremental"
        home = tmp_path / "dagster_home"  # on disk: a killed `make run` of another process shares it
        home.mkdir()
        instance = dg.DagsterInstance.local_temp(str(home))
        history = ["first build"]
        for step in range(STEPS + 1):
            where = f"seed {SEED}, step {step} ({history[-1]}); changes so far: {history}"
            if step:
                if step == UI_RUN_BEFORE:
                    materialize_all(world.env | {"RAG_DATA_DIR": str(data)}, instance)
                forced = FORCED.get(step)
                history.append(forced(world, data) if forced else world.change(data))
                if step == UI_RUN_BEFORE:
                    history[-1] = f"a run from the UI, then {history[-1]}"
                where = f"seed {SEED}, step {step} ({history[-1]})"
            env = world.env | {"RAG_DATA_DIR": str(data)}
            if step and fault_rng.random() < FAULTS:
                history[-1] += f", then {faulted(env, home, fault_rng, instance, llm)}"
                where = f"seed {SEED}, step {step} ({history[-1]})"
                assert not public_leaks(world, env), (
                    f"{where}: a public asker was shown {public_leaks(world, env)}"
                )
            sent = len(llm.requests)
            _, result = make_run(project_definitions(env), instance)
            # None: the change changed nothing; a release rejected against the last one fails the run
            assert result is None or result.success or failed(result) == ["release"], where
            assert make_run(project_definitions(env), instance)[1] is None, (
                f"{where}: still stale after one run"
            )
            scratch = tmp_path / "scratch"
            shutil.rmtree(scratch, ignore_errors=True)
            _, fresh = make_run(
                project_definitions(env | {"RAG_DATA_DIR": str(scratch)}), dg.DagsterInstance.ephemeral()
            )
            assert fresh.success, where
            assert_same(data, scratch, env["RAG_STRATEGIES"].split(","), where)
            assert_same_release(data, scratch, result, where)
            prompts = [r["messages"][-1]["content"] for r in llm.requests[sent:]]
            assert not leaks(world, prompts), f"{where}: {leaks(world, prompts)}"
