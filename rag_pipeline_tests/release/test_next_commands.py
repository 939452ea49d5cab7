"""The report's "next:" commands act on the build it reports: a build with its own data directory,
notes, questions and Dagster instance (as `make holdout`'s) gets them in front of each command."""

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
        '  RAG_DATA_DIR=data/build/holdout .venv/bin/python -m rag_pipeline.ask "What is WAL?"    ask the live index',
        f"  {where}make dev    the Dagster UI on http://127.0.0.1:3000 (evaluation_summary holds the report)",
        f"  RAG_RELEASE_RUN=section/minmax {where}make run    serve the best configuration instead",
    ]


def test_make_run_s_commands_are_plain(tmp_path, monkeypatch):
    shown = lines_for(tmp_path, monkeypatch, {"DAGSTER_HOME": str(DEFAULT_DAGSTER_HOME)})
    assert shown[-3] == '  .venv/bin/python -m rag_pipeline.ask "What is WAL?"    ask the live index'
    assert shown[-2].startswith("  make dev    ") and shown[-1].startswith(
        "  RAG_RELEASE_RUN=section/minmax make run "
    )
