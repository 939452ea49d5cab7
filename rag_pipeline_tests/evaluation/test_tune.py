"""`python -m rag_pipeline.tune` on the bundled corpus with a small space: each trial a Dagster run
tagged `rag/tune=<id>` in the session's own instance and data directory, its experiment and its look
at the test questions in the build's ledger, the best on dev confirmed on test once; the build `make
run` serves stays as it was, and a trial whose chunks the build has embeds no passage. Adopting the
winner (`best.env`) serves it and reproduces the figures tune confirmed; a winner with a built-in
strategy's chunks is named as that strategy; the printed commands carry every setting it sets."""

import json
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.lib.sources.bundled_repo import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_QUESTIONS
from rag_pipeline_tests.support.runs import cli, hashing_env

SPACE = """
[[strategy]]
kind = "fixed"
size = [400, 500]

[retrieval]
candidate_k = [20, 50]
"""
KEPT = ("reports/verdict.json", "release/current.json", "experiments/current.json")


@pytest.mark.slow
def test_tune_chooses_on_dev_and_confirms_on_test_beside_the_build(tmp_path):
    build_repository(BUNDLED_CORPUS, tmp_path / "notes")
    data = tmp_path / "data"
    env = hashing_env(
        tmp_path / "notes",
        BUNDLED_QUESTIONS,
        "section,fixed-500",
        "dense,bm25,rrf,minmax",
        RAG_DATA_DIR=str(data),
    )
    (tmp_path / "space.toml").write_text(SPACE)
    tune = ["--space", str(tmp_path / "space.toml"), "--budget", "3", "--json"]
    early = cli("rag_pipeline.tune", tune, env, tmp_path)
    assert early.returncode == 2 and "run `make run` first" in early.stderr
    assert cli("rag_pipeline.run", [], env, tmp_path).returncode == 0
    kept = {name: (data / name).read_bytes() for name in KEPT}

    done = cli("rag_pipeline.tune", tune, env, tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    trials, session = result["trials"], Path(result["session"])
    assert 2 <= len(trials) <= 3 and result["n_test"] > 0 and 0 <= result["test_p"] <= 1
    assert result["baseline"]["configuration"] == "section/dense"
    assert result["best"]["strategy"]["kind"] == "fixed" and result["best"]["retriever"]
    assert result["dev_value"] == max(t["dev_value"] for t in trials)
    listed = json.loads(cli("rag_pipeline.experiments", ["list", "--json"], env, tmp_path).stdout)
    by_id = {row["id"]: row for row in listed}
    assert {t["experiment"] for t in trials} <= {i for i, row in by_id.items() if row["tune"] == session.name}
    # the build's, each trial's (its own verdict), the tune's
    assert result["experiment"] in by_id and by_id[result["experiment"]]["test_looks"] == len(trials) + 2
    assert (session / "best-strategy.toml").read_text().startswith("[[strategy]]")
    size = result["best"]["strategy"]["size"]
    assert result["built_in"] == ("fixed-500" if size == 500 else None)
    assert (
        result["configuration"]
        == f"{result['built_in'] or f'tune-fixed-{size}'}/{result['best']['retriever']}"
    )

    # every trial is a run tagged with the session, in the session's own instance
    instance = dg.DagsterInstance.from_config(str(session / "dagster_home"))
    assert len(instance.get_runs(dg.RunsFilter(tags={"rag/tune": session.name}))) == len(trials)
    # the build make run serves is as it was, and nothing in it is stale
    assert {name: (data / name).read_bytes() for name in KEPT} == kept
    assert "nothing is stale" in cli("rag_pipeline.run", ["--plan"], env, tmp_path).stdout
    # the build's fixed-500 chunks have their vectors: a trial with the same chunks embeds none
    same = next(t["trial"] for t in trials if t["settings"]["strategy"]["size"] == 500)
    log = (session / "trials" / str(same) / "run.log").read_text()
    assert "embed: nothing, every passage is in the vector store" in log

    # adopting it: its configuration served and kept as the verdict's choice, its figures reproduced
    adopt = dict(line.split("=", 1) for line in (session / "best.env").read_text().splitlines())
    assert (
        adopt == result["adopt"]
        and adopt["RAG_RELEASE_RUN"] == adopt["RAG_CHOSEN_RUN"] == result["configuration"]
    )
    assert ("RAG_STRATEGY_FILE" in adopt) == (result["built_in"] is None)
    adopted = cli("rag_pipeline.run", ["--report"], env | adopt, tmp_path)  # as `make run`
    # the gate may hold it back (its own rules, e.g. answers abstaining less): exit 3
    assert adopted.returncode in (0, 3), adopted.stdout[-3000:] + adopted.stderr[-3000:]
    verdict = json.loads((data / "reports" / "verdict.json").read_text())
    chosen = verdict["best"][0] if "/" in verdict["best"][0] else f"{verdict['best'][0]}/dense"
    assert (chosen, verdict["kept"]) == (result["configuration"], verdict["best"][0])
    assert (verdict["dev_value"], verdict["test_value"]) == (result["dev_value"], result["test_value"])
    assert (verdict["delta"], verdict["p_value"]) == (result["test_delta"], result["test_p"])
    decided = pd.read_parquet(data / "release" / "history.parquet").iloc[-1]
    assert decided["run"] == result["configuration"]
    if decided["decision"] == "released":
        assert json.loads((data / "release" / "current.json").read_text())["run"] == result["configuration"]
    nexts = adopted.stdout.split("\nnext:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert nexts and all(f"RAG_CHOSEN_RUN={result['configuration']}" in line for line in nexts)
