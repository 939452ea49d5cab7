"""The parsers of the settings that need more than `lib/core/values.py`: paths made absolute, the notes
repository, a cron expression, retriever names, strategy/retriever runs, embedder specs. Each returns
the value as the pipeline uses it, or raises ValueError (its message, if any, says what is wrong)."""

from __future__ import annotations

import os

from rag_pipeline.lib.core import values
from rag_pipeline.lib.embedding import parse_embedder_spec
from rag_pipeline.lib.retrieval import parse_retriever
from rag_pipeline.lib.sources import is_remote


def path(value: str) -> str:
    """A local path as an absolute one, against the directory the command started in: every
    process of a run (the planner, `dagster job launch`, the run worker) then reads the same file."""
    return os.path.abspath(os.path.expanduser(value.strip()))


def data_dir(value: str) -> str:
    return value.strip() if value.strip().startswith("s3://") else path(value)


def ask_log(value: str) -> str:
    """`off`, unset, an s3:// URL, or a local directory made absolute."""
    value = value.strip()
    if value.lower() == "off":
        return "off"
    return data_dir(value) if value else ""


def repo(value: str) -> str:
    return value.strip() if not value.strip() or is_remote(value) else path(value)


def optional_path(value: str) -> str:
    return path(value) if value.strip() else ""


DEFAULT_CRON = "0 3 * * *"  # the nightly re-index


def cron(value: str) -> str:
    if value.strip() == DEFAULT_CRON:  # valid: not checked, so the CLIs that read files load no Dagster
        return DEFAULT_CRON
    import dagster as dg  # the check Dagster's schedules make, through a schedule of the expression

    try:
        dg.ScheduleDefinition(name="reindex", cron_schedule=value.strip(), job_name="index_and_evaluate")
    except dg.DagsterInvalidDefinitionError:
        raise ValueError(
            "five fields: minute hour day-of-month month day-of-week, e.g. '0 3 * * *'"
        ) from None
    return value.strip()


def retrievers(value: str) -> tuple[str, ...]:
    names = values.names(value)
    for name in names:
        parse_retriever(name)
    return names


def runs(value: str) -> str:
    """`strategy/retriever,...` with a valid retriever name in each, as `strategy/retriever` without
    spaces; whether the strategy is configured is known only to the definitions."""
    runs = []
    for run in values.names(value):
        strategy, slash, retriever = (part.strip() for part in run.partition("/"))
        if not (strategy and slash and retriever):
            raise ValueError(f"{run!r} is not strategy/retriever")
        parse_retriever(retriever)
        runs.append(f"{strategy}/{retriever}")
    return ",".join(runs)


def embedder_specs(value: str) -> tuple[str, ...]:
    """Empty, or comma-separated `backend[:model][@url]` embedders (see `parse_embedder_spec`)."""
    specs = tuple(n.strip() for n in value.split(",") if n.strip())
    for spec in specs:
        parse_embedder_spec(spec)
    return specs


def one_run(value: str) -> str:
    found = runs(value)
    if "," in found:
        raise ValueError("one run, not a list")
    return found
