"""The `judgments` asset in Dagster runs on the small repository, judged by the stand-in on 127.0.0.1
(fakes/judge.py: a protocol fake, no judge model can be installed here): access fails closed in every
judge prompt, a rerun asks nothing, an edited note re-asks only the prompts it changed, and a labels
file is a change the automation sees without asking the judge again."""

import json
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.lib.judging import SUMMARY_COLUMNS
from rag_pipeline_tests.fakes.judge import JUDGE_PROMPT, FakeJudge
from rag_pipeline_tests.fakes.llm import MODEL
from rag_pipeline_tests.support.repos import QUESTIONS, commit_files
from rag_pipeline_tests.support.runs import make_run, materialization_metadata, project_definitions, run_all

DEADLOCK = "content/notes/db/deadlock/index.md"
# words of the deadlock note that no question holds
RESTRICTED = ("40P01", "deadlock_timeout", "待ちグラフ", "指数バックオフ", "キューに移して")


def judge_env(small_env: dict, url: str) -> dict:
    return small_env | {
        "RAG_STRATEGIES": "section",
        "RAG_RETRIEVERS": "dense",
        "RAG_JUDGE": "openai",
        "RAG_JUDGE_URL": url,
        "RAG_JUDGE_MODEL": MODEL,
        "RAG_JUDGE_REPEATS": "2",
    }


def judge_prompts(server: FakeJudge, since: int = 0) -> list[tuple[str, int]]:
    return [
        (r["messages"][-1]["content"], r["seed"])
        for r in server.requests[since:]
        if JUDGE_PROMPT in r["messages"][-1]["content"]
    ]


def test_no_judge_prompt_holds_what_its_asker_may_not_read(notes_repo, small_env, tmp_path):
    text = Path(notes_repo.working_tree_dir, DEADLOCK).read_text()
    commit_files(
        notes_repo, {DEADLOCK: text.replace('title: "Deadlock"', 'title: "Deadlock"\naccess: [dba]')}, "dba"
    )
    commit_files(
        notes_repo,
        {
            "content/notes/web/cdn/index.md": "---\ntitle: CDN\naccess: web\n---\nCDN はエッジでキャッシュする。\n"
        },
        "web",
    )
    questions = [
        *QUESTIONS,
        QUESTIONS[0] | {"id": 9, "q": "(web) PostgreSQL が返すエラーコードは?", "groups": ["web"]},
        QUESTIONS[3] | {"id": 10, "q": "(web) 何回まで再試行する?", "groups": ["web"]},
        QUESTIONS[0] | {"id": 11, "q": "(dba) PostgreSQL が返すエラーコードは?", "groups": ["dba"]},
    ]
    (tmp_path / "q.json").write_text(json.dumps(questions, ensure_ascii=False))
    with FakeJudge() as server:
        assert run_all(judge_env(small_env, server.url) | {"RAG_QUESTIONS": str(tmp_path / "q.json")}).success
    prompts = [p for p, _ in judge_prompts(server)]
    web = [p for p in prompts if 'name="question">\n(web)' in p]
    # both questions on every criterion (prompts of the same text are asked once)
    assert {
        (q, c)
        for p in web
        for q in ("再試行", "エラーコード")
        for c in ("faithful", "correct", "cites_support")
        if q in p and f"Criterion: {c}\n" in p
    } == {(q, c) for q in ("再試行", "エラーコード") for c in ("faithful", "correct", "cites_support")}
    assert not [word for p in web for word in RESTRICTED if word in p]
    # the asker who may read the note is shown it: the check above can fail
    assert any("40P01" in p for p in prompts if 'name="question">\n(dba)' in p)


def test_a_rerun_asks_nothing_and_an_edit_re_asks_only_what_it_changed(notes_repo, small_env, tmp_path):
    with FakeJudge() as server:
        env = judge_env(small_env, server.url)
        first = run_all(env)
        sent = judge_prompts(server)
        meta = materialization_metadata(first, "judgments")
        assert meta["prompts_asked"] == len(sent) == len(set(sent))
        rows = pd.read_parquet(tmp_path / "out" / "answers" / "judgments.parquet")
        # 3 runs x 5 questions x 3 criteria x 2 repeats (prompts of one text were asked once)
        assert len(rows) == 3 * 5 * 3 * 2 and rows["judge_version"].str.startswith("openai:").all()
        summary = pd.read_parquet(tmp_path / "out" / "reports" / "judged_summary.parquet")
        assert list(summary.columns) == SUMMARY_COLUMNS
        assert summary.loc[summary["criterion"] == "faithful", "position_flip_rate"].notna().any()

        assert run_all(env).success and len(server.requests) == len(sent)  # a rerun asks nothing

        path = Path(notes_repo.working_tree_dir, "content/notes/net/tcp-handshake/index.md")
        commit_files(
            notes_repo,
            {
                "content/notes/net/tcp-handshake/index.md": path.read_text().replace(
                    "SYN-ACK and ACK", "SYN-ACK, ACK"
                )
            },
            "tcp: one edit",
        )
        assert run_all(env).success
        again = judge_prompts(server, len(sent))
        assert again and not set(again) & set(sent)  # only new prompts are asked
        assert all("three-way handshake" in p for p, _ in again)


def test_labels_correct_the_mean_and_a_new_labels_file_asks_nothing(small_env, tmp_path):
    with FakeJudge() as server:
        env = judge_env(small_env, server.url) | {"RAG_JUDGE_LABELS": str(tmp_path / "labels.json")}
        (tmp_path / "labels.json").write_text("[]")
        instance = dg.DagsterInstance.ephemeral()
        assert make_run(project_definitions(env), instance)[1].success
        sent = len(server.requests)
        items = pd.read_parquet(tmp_path / "out" / "answers" / "judged_items.parquet")
        mine = items[items["strategy"] == "section"]
        labels = [
            {k: row[k] for k in ("question_id", "strategy", "retriever", "answer_sha256")}
            | {"criterion": "faithful", "label": True}
            for _, row in mine.iterrows()
        ]
        (tmp_path / "labels.json").write_text(json.dumps(labels))
        found, result = make_run(project_definitions(env), instance)
        assert "judgments" in found.names() and result.success
        assert len(server.requests) == sent
        summary = pd.read_parquet(tmp_path / "out" / "reports" / "judged_summary.parquet")
        row = summary[(summary["strategy"] == "section") & (summary["criterion"] == "faithful")].iloc[0]
        # five labels are counted, and too few to make a figure
        assert row["n_labels"] == 5 and pd.isna(row["ppi_mean"]) and pd.isna(row["labels_low"])
        # the pages of answers and evaluation_summary show it too, as observations: nothing stale after
        for key in ("answers", "evaluation_summary"):
            seen = instance.fetch_observations(dg.AssetKey(key), limit=1).records[0].asset_observation
            assert "PPI++" in seen.metadata["judged_summary"].value
            line = seen.metadata["judged section/dense"].value
            assert "uncorrected: too few people's labels (5 of the 10 a figure needs)" in line
        assert make_run(project_definitions(env), instance)[1] is None


def test_the_default_judge_is_the_offline_rules(small_env, tmp_path):
    result = run_all(small_env | {"RAG_STRATEGIES": "section", "RAG_RETRIEVERS": "dense"})
    assert materialization_metadata(result, "judgments")["prompts_asked"] == 0
    rows = pd.read_parquet(tmp_path / "out" / "answers" / "judgments.parquet")
    assert rows["judge_version"].str.startswith("rules@").all() and set(rows["repeat"]) == {0}


def judged(server: FakeJudge) -> int:
    """How many judge requests the server was sent (either protocol)."""
    return sum(JUDGE_PROMPT in r["messages"][-1]["content"] for r in server.requests)


def warnings_of(instance: dg.DagsterInstance, result) -> list[str]:
    return [e.user_message for e in instance.all_logs(result.run_id) if e.level >= 30 and e.user_message]


@pytest.mark.slow
def test_a_judge_on_another_server_is_asked_unless_it_says_it_serves_the_same_model(small_env, tmp_path):
    """RAG_JUDGE_URL changed, RAG_JUDGE_MODEL the same: the new server is asked, for every verdict
    unless it names the same model as the cache's (Ollama's digest; an OpenAI-compatible server is
    named by its URL), and then its reuse is said in one line."""
    instance = dg.DagsterInstance.ephemeral()
    with FakeJudge() as first, FakeJudge() as other, FakeJudge() as same:
        env = judge_env(small_env, first.url)
        assert make_run(project_definitions(env), instance)[1].success
        asked = judged(first)
        found, result = make_run(project_definitions(env | {"RAG_JUDGE_URL": other.url}), instance)
        assert "judgments" in found.names() and result.success
        assert judged(other) == asked and not warnings_of(instance, result)

        ollama = env | {"RAG_JUDGE": "ollama"}
        other.digest = "sha256:another-build"
        assert make_run(project_definitions(ollama | {"RAG_JUDGE_URL": first.url}), instance)[1].success
        sent = len(first.requests)
        assert make_run(project_definitions(ollama | {"RAG_JUDGE_URL": other.url}), instance)[1].success
        assert judged(other) == 2 * asked  # another model under the same name

        found, result = make_run(project_definitions(ollama | {"RAG_JUDGE_URL": same.url}), instance)
        assert "judgments" in found.names() and result.success
        assert same.shown and not same.requests and len(first.requests) == sent
        said = [w for w in warnings_of(instance, result) if "cached replies" in w]
        assert len(said) == 1 and f"of {first.url}" in said[0] and f"for {same.url}" in said[0]
