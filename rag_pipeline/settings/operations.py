"""The settings of how the pipeline is operated: when runs start, where their steps run, and how
`ask` is served. Besides `RAG_WATCH_REF`, no output depends on them (`shared=False`): a worker or a
process of `ask` may hold its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_pipeline.lib.core import values
from rag_pipeline.settings import parsers
from rag_pipeline.settings.variables import one_of, var


@dataclass(frozen=True)
class Automation:
    """When runs start: the branch followed, the nightly schedule and the retries of a failed asset."""

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


@dataclass(frozen=True)
class Executor:
    """Where RAG_EXECUTOR's steps run: Dagster's executor `attribute` of the package `module`,
    which the pyproject `extra` installs (None: Dagster's own). Named here, not imported: `ask`
    reads these settings without loading Dagster."""

    module: str
    attribute: str
    extra: str | None = None


# every RAG_EXECUTOR by name: in the run's process, a process per step, a Celery worker per step
# (dagster-celery, Redis by default), a Kubernetes job per step (dagster-k8s); the steps are light
# glue around numpy and the in-process embedder, so one process is faster on one small machine
EXECUTORS = {
    "in_process": Executor("dagster", "in_process_executor"),
    "multiprocess": Executor("dagster", "multiprocess_executor"),
    "celery": Executor("dagster_celery", "celery_executor", "celery"),
    "k8s": Executor("dagster_k8s", "k8s_job_executor", "k8s"),
}


@dataclass(frozen=True)
class Cluster:
    """Where steps run: the executor, Celery's broker, backend and step timeout, and the run's tags."""

    executor: str = one_of(
        "RAG_EXECUTOR", "in_process", *EXECUTORS, shared=False
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


@dataclass(frozen=True)
class Asking:
    """`ask` and the ask log: how long a question may be, where asks are logged and what is redacted."""

    ask_max_chars: int = var(
        "RAG_ASK_MAX_CHARS",
        "2000",
        values.number(int, 1, 100_000),
        "an integer from 1 to 100,000: characters of a question `ask` takes (a longer one is refused)",
        shared=False,
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
