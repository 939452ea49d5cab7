"""The report's "next:" commands act on the build it reports: a build with its own data directory,
notes, questions and Dagster instance (as `make holdout`'s), or tune's retrieval settings, gets every
setting that differs from its default in front of each command."""

import pandas as pd

from rag_pipeline.cli.show_report import next_lines, pointing
from rag_pipeline.settings import DEFAULT_DAGSTER_HOME

CURRENT = {"run": "fixed-1000/dense", "commit": "1a2b3c4d5e6f7a8b"}
VERDICT = {"best": ["section/minmax"], "baseline": "fixed-1000"}


def lines_for(tmp_path, monkeypatch, env: dict[str, str]) -> list[str]:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data" / "build" / "holdout"
    (data / "notes").mkdir(parents=True)
    questions = pd.DataFrame(
        {"question_id": ["1"], "q": ["What is WAL?"], "answerable": [True], "groups": [None]}
    )
    questions.to_parquet(data / "notes" / "questions.parquet")
    return next_lines(data, CURRENT, VERDICT, pointing(env))


def test_the_holdout_build_s_commands_name_its_data_directory(tmp_path, monkeypatch):
    home = str(tmp_path / "data" / "build" / "holdout" / "dagster_home")
    env = {
        "DAGSTER_HOME": home,
        "RAG_NOTES_REPO": "data/build/holdout-repo",
        "RAG_QUESTIONS": "data/eval_sets/holdout/questions.json",
        "RAG_DATA_DIR": "data/build/holdout",
    }
    where = (
        f"DAGSTER_HOME={home} RAG_NOTES_REPO=data/build/holdout-repo "
        "RAG_QUESTIONS=data/eval_sets/holdout/questions.json RAG_DATA_DIR=data/build/holdout "
    )
    assert lines_for(tmp_path, monkeypatch, env)[-4:] == [
        "next:",
        f'  {where.removeprefix(f"DAGSTER_HOME={home} ")}.venv/bin/python -m rag_pipeline.ask "What is WAL?"    '
        "ask the live index",
        f"  {where}make dev    the Dagster UI on http://127.0.0.1:3000 (evaluation_summary holds the report)",
        f"  RAG_RELEASE_RUN=section/minmax {where}make run    serve the best configuration instead",
    ]


def test_make_run_s_commands_are_plain(tmp_path, monkeypatch):
    shown = lines_for(tmp_path, monkeypatch, {"DAGSTER_HOME": str(DEFAULT_DAGSTER_HOME)})
    assert shown[-3] == '  .venv/bin/python -m rag_pipeline.ask "What is WAL?"    ask the live index'
    assert shown[-2].startswith("  make dev    ") and shown[-1].startswith(
        "  RAG_RELEASE_RUN=section/minmax make run "
    )


def test_tune_s_settings_are_carried_by_every_command(tmp_path, monkeypatch):
    """After `set -a; . best.env; set +a`: the strategy file, the retrieval settings and the run kept."""
    (tmp_path / "best-strategy.toml").write_text('[[strategy]]\nname = "tune-fixed-500-100"\n')
    best_env = f"""RAG_STRATEGY_FILE={tmp_path / "best-strategy.toml"}
RAG_CANDIDATE_K=20
RAG_RRF_K=30
RAG_DENSE_WEIGHT=0.3
RAG_CHOSEN_RUN=section/minmax
RAG_RELEASE_RUN=fixed-1000/dense"""
    env = dict(line.split("=", 1) for line in best_env.splitlines())
    shown = lines_for(tmp_path, monkeypatch, env)[-3:]
    for line in shown:
        for name in ("RAG_STRATEGY_FILE=best-strategy.toml", "RAG_CANDIDATE_K=20", "RAG_RRF_K=30.0"):
            assert name in line, line
        assert "RAG_DENSE_WEIGHT=0.3 " in line and "RAG_CHOSEN_RUN=section/minmax " in line
    assert "RAG_RELEASE_RUN=fixed-1000/dense" in shown[0] and shown[-1].count("RAG_RELEASE_RUN=") == 1
