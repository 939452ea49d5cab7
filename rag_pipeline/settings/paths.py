"""Where the project and its bundled inputs are: the defaults of the settings that name files."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_CORPUS = PROJECT_ROOT / "data" / "corpus"
BUNDLED_REPO = PROJECT_ROOT / "data" / "notes-repo"
BUNDLED_QUESTIONS = PROJECT_ROOT / "data" / "questions.json"
BUNDLED_PRICES = PROJECT_ROOT / "data" / "prices.toml"
DEFAULT_DATA_DIR = PROJECT_ROOT / "data" / "build"
DEFAULT_DAGSTER_HOME = (
    PROJECT_ROOT / "data" / "dagster_home"
)  # the Makefile's; every CLI's without DAGSTER_HOME
