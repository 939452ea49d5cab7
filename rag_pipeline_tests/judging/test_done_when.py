"""Issue 44's "done when", on the bundled corpus (hashing embedder, `section`, `dense`, answers for
`section/dense`) through the `make run` path, with an OpenAI-compatible judge on 127.0.0.1 that answers
at random: 70% yes, 30% no, 5% not JSON (fakes/judge.py: a protocol fake, no judge model can be
installed here), three repeats; then 60 people's labels saying yes; then the default rules judge."""

import json
import shutil

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.lib.sources.bundled_repo import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_QUESTIONS
from rag_pipeline_tests.fakes.judge import FakeJudge
from rag_pipeline_tests.fakes.llm import MODEL
from rag_pipeline_tests.support.runs import make_run, project_definitions

YES, INVALID = 0.7, 0.05


def agreement_of_three() -> float:
    """The share of answers whose valid verdicts agree, of three repeats each valid with 0.95 and yes with 0.7."""
    valid = 1 - INVALID
    agree = {1: 1.0, 2: YES**2 + (1 - YES) ** 2, 3: YES**3 + (1 - YES) ** 3}
    weight = {1: 3 * valid * INVALID**2, 2: 3 * valid**2 * INVALID, 3: valid**3}
    return sum(weight[k] * agree[k] for k in agree) / sum(weight.values())


def faithful_row(data) -> pd.Series:
    summary = pd.read_parquet(data / "reports" / "judged_summary.parquet")
    mine = summary[(summary["strategy"] == "section") & (summary["retriever"] == "dense")]
    return mine[mine["criterion"] == "faithful"].iloc[0]


@pytest.mark.slow
def test_a_random_judge_is_measured_and_corrected_on_the_bundled_corpus(tmp_path):
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
        "RAG_STRATEGIES": "section",
        "RAG_RETRIEVERS": "dense",
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
        # within 4 standard deviations of what ~297 answers give (0.016 and 0.027)
        assert abs(row["judge_mean"] - YES) < 0.065
        assert abs(row["repeat_agreement"] - agreement_of_three()) < 0.11  # about 0.40
        assert row["n_invalid"] > 0 and pd.isna(row["ppi_mean"]) and row["n_labels"] == 0
        sent = len(server.requests)

        assert make_run(project_definitions(judged), instance)[1] is None  # a rerun asks nothing
        assert len(server.requests) == sent

        items = pd.read_parquet(data / "answers" / "judged_items.parquet")
        chosen = items[items["strategy"] == "section"].sample(60, random_state=44)
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
        assert row["n_labels"] == 60
        assert row["ppi_mean"] - row["judge_mean"] > 0.15 and row["ppi_high"] >= 0.95
        print(f"random judge: {row.to_dict()}")

    assert make_run(project_definitions(env), instance)[1].success  # RAG_JUDGE unset
    summary = pd.read_parquet(data / "reports" / "judged_summary.parquet")
    assert summary["judge_version"].str.startswith("rules@").all()
    assert set(summary["criterion"]) == {"faithful", "correct", "cites_support"}
    print(f"rules judge:\n{summary.drop(columns=['llm_version', 'judge_version']).to_string()}")
