"""The experiment ledger: every evaluation kept under an id of what shaped it, any two compared question
by question. Real pipeline runs on a generated repository of notes; the embedders are real (hashing in
process, and the Ollama protocol stand-in on 127.0.0.1, whose vectors are hashes: a random ranking)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rag_pipeline.lib.evaluation import compare, holm, resolve
from rag_pipeline.lib.evaluation.experiments import CURRENT, INDEX, OUTCOMES, prune
from rag_pipeline.lib.evaluation.ranking import HIT
from rag_pipeline.lib.evaluation.versus import Side
from rag_pipeline_tests.fakes.json_server import free_port
from rag_pipeline_tests.fakes.ollama import FakeOllama
from rag_pipeline_tests.support.farm import N_NOTES, cli, files_of, note, question, write_questions
from rag_pipeline_tests.support.repos import commit_files
from rag_pipeline_tests.support.runs import materialization_metadata, run_all


def test_two_embedders_compare_on_the_same_questions_and_a_rerun_adds_nothing(farm, monkeypatch, capsys):
    _, env, root = farm
    with FakeOllama() as server:
        server.max_chars = 5000
        ollama = env | {"RAG_EMBEDDER": "ollama", "RAG_EMBED_URL": server.url, "RAG_EMBED_MODEL": "bge-m3"}
        assert run_all(ollama).success
    result = run_all(env)
    index = pd.read_parquet(root / INDEX)
    assert len(index) == 2 and index["id"].is_unique
    settings = [json.loads(s) for s in index["settings"]]
    assert [s["embedding_version"].split(":")[0] for s in settings] == ["ollama", "hashing"]
    # only the embedder differs
    assert {k: v for k, v in settings[0].items() if k != "embedding_version"} == {
        k: v for k, v in settings[1].items() if k != "embedding_version"
    }
    assert json.loads((root / CURRENT).read_text()) == {"id": index["id"][1], "previous": index["id"][0]}

    before, after = resolve(root, "previous"), resolve(root, "current")
    c = compare(before, after)
    assert c.n_questions == c.n_a == c.n_b == N_NOTES
    assert c.delta > 0 and len(c.won) > len(c.lost) and c.p_value < 0.05  # hashing beats random vectors

    shown = materialization_metadata(result, "evaluation_summary")
    said = f"hashing:char-1-2-3gram vs ollama:bge-m3: {c.delta:+.2f} (p = {c.p_value:.2g}), {len(c.won)} questions won, {len(c.lost)} lost"
    assert shown["vs previous experiment"] == said
    assert "`embedding_version`" in shown["experiments"] and "Newly found" in shown["experiments"]

    status, out, _ = cli(monkeypatch, capsys, root, "compare", "previous:fixed-200/dense", "--json")
    got = json.loads(out)
    assert status == 0 and set(got) == {
        "a",
        "b",
        "measure",
        "n_questions",
        "value_a",
        "value_b",
        "delta",
        "p_value",
        "won",
        "lost",
    }
    assert got["a"] == f"{index['id'][0]}:fixed-200/dense" and got["delta"] == round(c.delta, 4) > 0
    assert sorted(got["won"]) == sorted(q for q, _, _ in c.won)
    status, out, _ = cli(monkeypatch, capsys, root, "compare", "--all")
    assert status == 0 and "| fixed-200/dense |" in out and "Holm-corrected for the 1 comparisons" in out
    status, out, _ = cli(monkeypatch, capsys, root, "list", "--json")
    assert [e["id"] for e in json.loads(out)] == list(index["id"])
    assert set(json.loads(out)[0]) >= {
        "id",
        "time",
        "commit",
        "embedding_version",
        "questions_sha256",
        "best",
    }

    kept = files_of(root)
    assert run_all(env).success  # a fresh instance: evaluation_summary runs again, on the same experiment
    assert files_of(root) == kept


def test_compare_keeps_to_the_questions_both_scored(farm, monkeypatch, capsys):
    repo, env, root = farm
    first = repo.head.commit.hexsha
    stale = question(2, commit=first)  # its evidence is edited away in the next commit
    assert run_all(
        env
        | {
            "RAG_QUESTIONS": write_questions(
                Path(env["RAG_DATA_DIR"]).parent / "a.json",
                [question(i) for i in range(2)] + [stale] + [question(i) for i in range(3, 14)],
            )
        }
    ).success
    commit_files(
        repo, {"content/notes/farm/farm-2/index.md": note(2, "nobody remembers what the barn held")}, "forget"
    )
    reworded = question(5, q="What is kept in the barn?")  # the same id, another question
    later = [stale, reworded] + [question(i) for i in range(4, N_NOTES) if i != 5]
    assert run_all(
        env | {"RAG_QUESTIONS": write_questions(Path(env["RAG_DATA_DIR"]).parent / "b.json", later)}
    ).success

    after = resolve(root, "current")
    assert after.rows.set_index("question_id").at["3", "gold_status"] == "stale"
    assert pd.isna(after.rows.set_index("question_id").at["3", HIT])
    c = compare(resolve(root, "previous"), after)
    # a scored 1..14, b 5..20 (3 is stale in b); shared: 5..14 but 6, reworded
    assert (c.n_a, c.n_b, c.n_questions) == (14, 16, 9)
    assert not {q for q, _, _ in c.won + c.lost} & {"3", "6"}
    status, out, _ = cli(monkeypatch, capsys, root, "compare", "previous", "current:fixed-200/dense")
    assert status == 0 and "compared on the 9 questions both scored (a scored 14, b 16)" in out

    status, out, err = cli(monkeypatch, capsys, root, "compare", "0000", "current")
    assert status == 2 and not out and len(err.strip().splitlines()) == 1
    assert err.startswith("error: '0000': no experiment in ") and "experiments list" in err
    status, _, err = cli(monkeypatch, capsys, root, "compare", "current:fixed-200/bm25")
    assert status == 2 and "has no scored configuration 'fixed-200/bm25' (it has: fixed-200/dense)" in err


def side(hits_a_or_b: list[int], experiment: str) -> Side:
    n = len(hits_a_or_b)
    rows = pd.DataFrame(
        {
            "strategy": "s",
            "retriever": "dense",
            "question_id": [str(i) for i in range(n)],
            "question_sha256": [f"q{i}" for i in range(n)],
            "answerable": True,
            "gold_status": "ok",
            "first_evidence_rank": pd.array([1 if h else None for h in hits_a_or_b], dtype="Int64"),
            HIT: pd.array([bool(h) for h in hits_a_or_b], dtype="boolean"),
            **{f"hit@{k}": pd.array([bool(h) for h in hits_a_or_b], dtype="boolean") for k in (1, 3, 5, 10)},
        }
    )
    return Side(experiment, "s/dense", rows, {})


def test_paired_p_value_matches_scipy():
    rng = np.random.default_rng(3)
    for n in (8, 12):
        a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
        b[:3] = 1  # a difference worth testing
        c = compare(side(list(a), "A"), side(list(b), "B"))
        exact = stats.permutation_test(
            (b.astype(float), a.astype(float)),
            lambda x, y, axis: np.mean(x - y, axis=axis),
            permutation_type="samples",
            n_resamples=np.inf,
            alternative="two-sided",
            vectorized=True,
        ).pvalue
        # 10,000 random sign flips against the exact distribution: within a few Monte Carlo errors
        assert c.p_value == pytest.approx(exact, abs=0.02), (n, a, b)
        assert c.delta == pytest.approx(b.mean() - a.mean())


def test_holm_against_hand_computed():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> monotone 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_prune_keeps_the_newest_and_the_current_pair(tmp_path):
    root = tmp_path / "experiments"
    ids = ["e1", "e2", "e3", "e4"]
    for e in ids:
        (root / e).mkdir(parents=True)
        (root / e / OUTCOMES).write_bytes(b"x")
    pd.DataFrame({"id": ids, "time": ["t"] * 4}).to_parquet(root / INDEX)
    (root / CURRENT).write_text(json.dumps({"id": "e2", "previous": "e1"}))
    assert prune(root, 1) == ["e3"]
    assert sorted(os.listdir(root)) == sorted([CURRENT, INDEX, "e1", "e2", "e4"])
    assert list(pd.read_parquet(root / INDEX)["id"]) == ["e1", "e2", "e4"]
    assert prune(root, 1) == []


@pytest.mark.slow  # two `make run`s through `dagster job launch`: a few minutes here
def test_run_embedders_builds_under_each_and_prints_one_table(farm, tmp_path):
    _, env, root = farm
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        "run_coordinator:\n  module: dagster.core.run_coordinator\n  class: DefaultRunCoordinator\n"
    )
    with FakeOllama() as server:
        server.max_chars = 5000
        specs = f"hashing,ollama:bge-m3@{server.url}"
        done = subprocess.run(
            [sys.executable, "-m", "rag_pipeline.experiments", "run-embedders", specs],
            env=os.environ | env | {"DAGSTER_HOME": str(home)},
            capture_output=True,
            text=True,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    index = pd.read_parquet(root / INDEX)
    assert [v.split(":")[0] for v in index["embedding_version"]] == ["hashing", "ollama"]
    table = done.stdout[done.stdout.rindex("evidence recall within") :]
    assert "Holm-corrected for the 1 comparisons" in table
    header, _, row = table.strip().splitlines()[-3:]
    assert f"| hashing ({index['id'][0]}) | ollama:bge-m3@{server.url} ({index['id'][1]}) |" in header
    assert (
        row.startswith("| fixed-200/dense | ") and ", p = " in row and " (-0." in row
    )  # random vectors lose
    # and the release gate held their index back: exit 3 of that run, its decision printed
    assert (
        f"== ollama:bge-m3@{server.url}: the release gate held the new index back\nlast decision: rejected"
        in done.stdout
    )


def test_run_embedders_stops_at_a_failed_run_saying_why(farm, tmp_path):
    _, env, root = farm
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    done = subprocess.run(
        [sys.executable, "-m", "rag_pipeline.experiments", "run-embedders", f"ollama:bge-m3@{dead},hashing"],
        env=os.environ | env | {"DAGSTER_HOME": str(tmp_path / "home"), "RAG_EMBED_RETRIES": "0"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "== hashing" not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"error: the run under ollama:bge-m3@{dead} failed (exit 1): FAILED embeddings_fixed_200: "
    )
    assert "cannot connect" in last and not root.exists()
