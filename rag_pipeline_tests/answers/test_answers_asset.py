"""The `answers` asset in a Dagster run: the offline answerer, the baselines, and a chat server on
127.0.0.1 (fakes/llm.py stands in for an LLM, which cannot be installed here)."""

import pyarrow.parquet as pq

from rag_pipeline_tests.fakes.llm import FakeLLM
from rag_pipeline_tests.support.runs import materialization_metadata, run_all


def test_offline_answers_cover_the_baselines_and_the_chosen_runs(small_env, tmp_path):
    assert run_all(small_env | {"RAG_RETRIEVERS": "dense,bm25"}).success
    answers = pq.read_table(tmp_path / "out" / "answers" / "answers.parquet").to_pandas()
    runs = set(zip(answers["strategy"], answers["retriever"]))
    assert {("-", "none"), ("-", "oracle"), ("fixed-1000", "dense")} <= runs
    assert answers["llm_version"].str.startswith("extractive:").all()
    summary = pq.read_table(tmp_path / "out" / "reports" / "answer_summary.parquet")
    assert summary.schema.metadata[b"rag.commit"]
    table = summary.to_pandas().set_index("retriever")
    # no context, nothing to cite: every answerable question is declined
    assert table.at["none", "false_abstain"] == 1.0
    assert table.at["oracle", "citation_recall"] > table.at["none", "citation_recall"]


def test_a_chat_server_is_asked_once_per_prompt(small_env):
    with FakeLLM() as server:
        env = small_env | {
            "RAG_RETRIEVERS": "dense",
            "RAG_LLM": "openai",
            "RAG_LLM_URL": server.url,
            "RAG_LLM_MODEL": "qwen3:4b",
            "RAG_ANSWER_RUNS": "section/dense",
            "RAG_RELEASE_RUN": "section/dense",  # else the release run is answered too
        }
        first = run_all(env)
        asked = materialization_metadata(first, "answers")["prompts_asked"]
        # none, oracle, section/dense x 5 questions; the unanswerable one has no oracle section, so its
        # oracle prompt is its no-context prompt, asked once
        assert asked == len(server.requests) == 3 * 5 - 1
        second = run_all(env)
        assert materialization_metadata(second, "answers")["prompts_asked"] == 0
        assert len(server.requests) == asked


def test_answer_repeats_are_requests_of_their_own_and_judged_each(small_env, tmp_path):
    with FakeLLM() as server:
        env = small_env | {
            "RAG_STRATEGIES": "section",
            "RAG_RETRIEVERS": "dense",
            "RAG_LLM": "openai",
            "RAG_LLM_URL": server.url,
            "RAG_LLM_MODEL": "qwen3:4b",
            "RAG_ANSWER_REPEATS": "2",
        }
        assert run_all(env).success
        # none, oracle, section/dense x 5 questions, less the one prompt none and oracle share; twice
        assert len(server.requests) == 2 * (3 * 5 - 1)
        assert {r["seed"] for r in server.requests} == {0, 1}
    answers = pq.read_table(tmp_path / "out" / "answers" / "answers.parquet").to_pandas()
    assert len(answers) == 2 * 3 * 5 and set(answers["repeat"]) == {0, 1}
    summary = pq.read_table(tmp_path / "out" / "reports" / "answer_summary.parquet").to_pandas()
    assert set(summary["n_questions"]) == {5}
    # the rules judge each generation repeat: repeat r judges the answer of repeat r
    judged = pq.read_table(tmp_path / "out" / "answers" / "judgments.parquet").to_pandas()
    assert len(judged) == 2 * 3 * 5 * 3 and set(judged["repeat"]) == {0, 1}
