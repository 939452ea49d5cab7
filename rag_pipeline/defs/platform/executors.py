"""Where a run's steps run, as RAG_EXECUTOR names it (`settings.operations.EXECUTORS`). Celery and
Kubernetes come with an extra; without it, loading the code location fails with one line."""

import importlib
import warnings

import dagster as dg

from rag_pipeline.settings import Settings, SettingsError
from rag_pipeline.settings.operations import EXECUTORS

VISIBILITY_MARGIN_S = 60  # beyond RAG_CELERY_TASK_TIMEOUT: a step's process starts and reports in it


def executor_for(settings: Settings) -> dg.ExecutorDefinition:
    """The job's executor (`EXECUTORS`). Celery's config is `celery_config`'s; k8s's image, namespace
    and the rest come from the run launcher or run config."""
    chosen = EXECUTORS[settings.executor]
    try:
        executor = getattr(importlib.import_module(chosen.module), chosen.attribute)
    except ImportError:
        raise SettingsError(
            f"RAG_EXECUTOR={settings.executor} needs the {chosen.extra} extra: "
            f"pip install -e '.[{chosen.extra}]'"
        ) from None
    configure = CONFIGURED.get(settings.executor)
    return executor if configure is None else executor.configured(configure(settings))


def celery_config(settings: Settings) -> dict:
    """The Celery executor's config: the run's, and its workers' `celery.yaml` (`make worker` writes
    it with `python -m rag_pipeline.cli.celery_yaml`). A task is acknowledged once its step has
    ended, not when a worker takes it: a worker killed with a step leaves the task in Redis, which
    gives it to another worker when the visibility timeout has passed since its delivery; a step
    process that dies puts its task back at once. A step runs at most RAG_CELERY_TASK_TIMEOUT
    seconds, so no task still running is given out twice."""
    from dagster_celery.defaults import broker_transport_options  # dagster-celery's retry policy

    timeout = settings.celery_task_timeout
    transport = broker_transport_options | {
        "visibility_timeout": timeout + VISIBILITY_MARGIN_S,
        # every 10 s a worker gives back what a lost one held (kombu's default: every 100 s)
        "unacked_restore_interval": 10,
        "unacked_restore_throttle": 1,
    }
    return {
        "broker": settings.celery_broker,
        "backend": settings.celery_backend,
        "config_source": {
            "task_acks_late": True,
            "task_reject_on_worker_lost": True,
            "task_time_limit": timeout,
            "broker_transport_options": transport,
        },
    }


def celery(settings: Settings) -> dict:
    """The Celery executor's config (`celery_config`), for a run."""
    from celery.exceptions import DuplicateTaskNameWarning

    # dagster-celery registers its step task anew for each step it submits: not a mistake here
    warnings.filterwarnings("ignore", category=DuplicateTaskNameWarning)
    return celery_config(settings)


CONFIGURED = {"celery": celery}  # the executors configured from the settings, by RAG_EXECUTOR name


def unreachable(settings: Settings) -> str | None:
    """Why a Celery run could not start now: its broker or result backend does not answer (a Redis
    URL is asked at once, with a short deadline); None when it could, or for another executor."""
    if settings.executor != "celery":
        return None
    import redis  # dagster-celery's Redis extra

    for variable, url in (
        ("RAG_CELERY_BROKER", settings.celery_broker),
        ("RAG_CELERY_BACKEND", settings.celery_backend),
    ):
        if not url.startswith(("redis://", "rediss://")):
            continue
        try:
            redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping()
        except redis.RedisError as exc:
            return unreachable_line(variable, url, exc)
    return None


def unreachable_line(variable: str, url: str, exc: Exception) -> str:
    """One line for a Celery broker or result backend (Redis) that does not answer."""
    return (
        f"{variable}={url} cannot be reached ({' '.join(str(exc).split())[:120]}): start Redis "
        "(`make services` starts one on RAG_REDIS_PORT) or set it to a running one"
    )
