"""Issues 44 and 54's "done when", on one build of the bundled corpus (hashing embedder, strategies
`section` and `fixed-1000`, retrievers `dense` and `bm25`, answers for `section/dense`) through the
`make run` path, with an OpenAI-compatible judge on 127.0.0.1 that answers at random whatever the
prompt: 70% yes, 30% no, 5% not JSON (fakes/judge.py: a protocol fake, no judge model can be installed
here), three repeats; then 60 people's labels saying yes; then the default rules judge, with one
question more in the questions file.

Issue 54: the judge's position bias reads net of its own noise (about 0 for a judge that ignores the
order), the corrected interval is never wider than the labels' own and kappa is null when the labels
are all one value, the rules judge's `faithful` on extractive answers is true by construction; the
verdict's figures are of one population, looks are counted by the test questions themselves, and
`experiments compare` chooses on the development questions."""

import json
import shutil

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.cli.experiments import main as experiments
from rag_pipeline.lib.sources.bundled_repo import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_QUESTIONS
from rag_pipeline_tests.fakes.judge import FakeJudge
from rag_pipeline_tests.fakes.llm import MODEL
from rag_pipeline_tests.support.runs import make_run, project_definitions

YES, INVALID = 0.7, 0.05


def agreement_of_three() -> float:
    """The share of answers whose valid verdicts agree, of those with two valid or more, of three
    repeats each valid with 0.95 and yes with 0.7."""
    valid = 1 - INVALID
    agree = {2: YES**2 + (1 - YES) ** 2, 3: YES**3 + (1 - YES) ** 3}
    weight = {2: 3 * valid**2 * INVALID, 3: valid**3}
    return sum(weight[k] * agree[k] for k in agree) / sum(weight.values())


def faithful_row(data) -> pd.Series:
    summary = pd.read_parquet(data / "reports" / "judged_summary.parquet")
    mine = summary[(summary["strategy"] == "section") & (summary["retriever"] == "dense")]
    return mine[mine["criterion"] == "faithful"].iloc[0]


def shown(capsys, what: str, figures: object) -> None:
    with capsys.disabled():  # the figures measured, for the record
        print(f"\n{what}: {figures}")


def ledger(monkeypatch, capsys, data, *args: str) -> object:
    """`python -m rag_pipeline.experiments ARGS --json` on `data`, in this process: its JSON."""
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    capsys.readouterr()
    assert experiments([*args, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    with capsys.disabled():  # the figures measured, for the record
        print(f"\nexperiments {' '.join(args)} --json: {found}")
    return found


@pytest.mark.slow
def test_a_random_judge_is_measured_and_corrected_and_nothing_chooses_on_test(tmp_path, monkeypatch, capsys):
    build_repository(BUNDLED_CORPUS, tmp_path / "notes")
    shutil.copy(BUNDLED_QUESTIONS, tmp_path / "questions.json")
    labels = tmp_path / "labels.json"
    labels.write_text("[]")
    data = tmp_path / "data"
    env = {
        "RAG_NOTES_REPO": str(tmp_path / "notes"),
        "RAG_QUESTIONS": str(tmp_path / "questions.json"),
        "RAG_DATA_DIR": str(data),
        "RAG_EMBEDDER": "hashing",
        "RAG_STRATEGIES": "section,fixed-1000",
        "RAG_RETRIEVERS": "dense,bm25",
        "RAG_ANSWER_RUNS": "section/dense",
        "RAG_JUDGE_LABELS": str(labels),
    }
    instance = dg.DagsterInstance.ephemeral()
    with FakeJudge(yes=YES, invalid=INVALID) as server:
        judged = env | {
            "RAG_JUDGE": "openai",
            "RAG_JUDGE_URL": server.url,
            "RAG_JUDGE_MODEL": MODEL,
            "RAG_JUDGE_REPEATS": "3",
        }
        assert make_run(project_definitions(judged), instance)[1].success
        row = faithful_row(data)
        shown(capsys, "random judge, no labels", row.to_dict())
        # within 4 standard deviations of what ~297 answers give (0.016 and 0.027)
        assert abs(row["judge_mean"] - YES) < 0.065
        assert abs(row["repeat_agreement"] - agreement_of_three()) < 0.11  # about 0.40
        assert row["n_invalid"] > 0 and pd.isna(row["ppi_mean"]) and row["n_labels"] == 0
        # reversing the passages changes ~42% of its verdicts, and asking again in the same order as
        # many: a judge that ignores the order has no position bias
        assert 0.3 < row["position_disagreement"] < 0.55 and 0.3 < row["same_order_disagreement"] < 0.55
        assert row["position_flip_rate"] <= 0.15
        assert not row["by_construction"]
        sent = len(server.requests)

        assert make_run(project_definitions(judged), instance)[1] is None  # a rerun asks nothing
        assert len(server.requests) == sent

        items = pd.read_parquet(data / "answers" / "judged_items.parquet")
        chosen = items[(items["strategy"] == "section") & (items["retriever"] == "dense")]
        chosen = chosen.sample(60, random_state=44)
        labels.write_text(
            json.dumps(
                [
                    {k: r[k] for k in ("question_id", "strategy", "retriever", "answer_sha256")}
                    | {"criterion": "faithful", "label": True}
                    for _, r in chosen.iterrows()
                ]
            )
        )
        found, result = make_run(project_definitions(judged), instance)
        assert "judgments" in found.names() and result.success
        assert len(server.requests) == sent  # labels ask the judge nothing
        row = faithful_row(data)
        shown(capsys, "random judge, 60 labels all yes", row.to_dict())
        assert row["n_labels"] == 60 and row["ppi_mean"] - row["judge_mean"] > 0.15
        assert row["labels_low"] > 0.93 and row["labels_high"] == 1.0
        assert row["ppi_high"] - row["ppi_low"] <= row["labels_high"] - row["labels_low"]
        assert pd.isna(row["kappa"]) and 0.5 < row["agreement"] < 0.9  # the labels are all yes

    verdict = json.loads((data / "reports" / "verdict.json").read_text())
    shown(capsys, "verdict.json", verdict)
    assert verdict["compared_on"] == "test" and verdict["n_test"] >= 6
    assert round(verdict["best_value"] - verdict["baseline_value"], 4) == verdict["delta"]
    first = ledger(monkeypatch, capsys, data, "list")[-1]["id"]

    # one question more, judged by the rules (RAG_JUDGE unset)
    questions = json.loads(BUNDLED_QUESTIONS.read_text(encoding="utf-8"))
    questions.append(questions[0] | {"id": 9001, "q": f"{questions[0]['q']}（もう一度）"})
    (tmp_path / "questions.json").write_text(json.dumps(questions, ensure_ascii=False))
    assert make_run(project_definitions(env), instance)[1].success
    summary = pd.read_parquet(data / "reports" / "judged_summary.parquet")
    assert summary["judge_version"].str.startswith("rules@").all()
    rules = summary[(summary["strategy"] == "section") & (summary["retriever"] == "dense")].set_index(
        "criterion"
    )
    shown(capsys, "rules judge", rules.drop(columns=["llm_version", "judge_version"]).to_string())
    assert rules.loc["faithful", "by_construction"] and rules.loc["cites_support", "by_construction"]
    assert not rules.loc["correct", "by_construction"] and pd.isna(rules.loc["faithful", "repeat_agreement"])

    listed = ledger(monkeypatch, capsys, data, "list")
    assert listed[-1]["id"] != first and listed[-1]["test_looks"] >= 2
    compared = ledger(monkeypatch, capsys, data, "compare", first, listed[-1]["id"])
    assert (
        compared["chosen_on"] == "dev"
        if isinstance(compared, dict)
        else all(c["correction"] == "holm" for c in compared)
    )
