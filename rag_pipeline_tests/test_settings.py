"""A `RAG_*` variable that is no setting gets one warning line per process, naming the closest
setting; the project's own other variables get none."""

import os
import subprocess
import sys

from rag_pipeline.settings import OTHER_VARIABLES, Settings, unknown_variables


def test_an_unknown_variable_names_the_closest_setting():
    env = {"RAG_EMBEDER": "hashing", "RAG_QUESTION": "q.json", "RAG_FROBNICATE": "1", "RAG_EMBEDDER": "x"}
    assert unknown_variables(env) == [
        "warning: RAG_EMBEDER is not a setting; did you mean RAG_EMBEDDER?",
        "warning: RAG_FROBNICATE is not a setting; the settings are listed in rag_pipeline/settings/stages.py or operations.py",
        "warning: RAG_QUESTION is not a setting; did you mean RAG_QUESTIONS?",
    ]


def test_the_projects_other_variables_and_other_prefixes_do_not_warn():
    assert (
        unknown_variables(dict.fromkeys([*OTHER_VARIABLES, "RAG_DATA_DIR", "DAGSTER_HOME", "RAGS"], "1"))
        == []
    )


def test_the_warning_is_printed_once_per_process_however_often_settings_are_read():
    """The code location reads the environment at import and again per job: one line in all."""
    code = (
        "import os\n"
        "from rag_pipeline import definitions\n"
        "from rag_pipeline.settings import Settings\n"
        "definitions.build_definitions(Settings.from_env(os.environ))\n"
    )
    env = os.environ | {"RAG_EMBEDER": "hashing", "RAG_EMBEDDER": "hashing", "RAG_VERBOSE": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    lines = [line for line in done.stderr.splitlines() if "RAG_" in line]
    assert lines == ["warning: RAG_EMBEDER is not a setting; did you mean RAG_EMBEDDER?"]


def test_settings_still_load_beside_an_unknown_variable(capsys):
    assert Settings.from_env({"RAG_EMBEDDER": "hashing", "RAG_TEST_ONLY_TYPO": "1"}).embedder == "hashing"
    assert "warning: RAG_TEST_ONLY_TYPO is not a setting" in capsys.readouterr().err
