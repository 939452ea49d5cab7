"""Where a run's steps run, as RAG_EXECUTOR names it: in the run's process, a process per step, a
Celery worker per step (dagster-celery, Redis by default), or a Kubernetes job per step (dagster-k8s).
The last two come with an extra; without it, loading the code location fails with one line."""

import importlib

import dagster as dg

from rag_pipeline.settings import Settings, SettingsError

# RAG_EXECUTOR -> (module, the pyproject extra that installs it)
EXTRAS = {"celery": ("dagster_celery", "celery"), "k8s": ("dagster_k8s", "k8s")}


def executor_for(settings: Settings) -> dg.ExecutorDefinition:
    """The job's executor. Celery's broker and backend come from RAG_CELERY_BROKER and
    RAG_CELERY_BACKEND; k8s's image, namespace and the rest from the run launcher or run config."""
    name = settings.executor
    if name == "in_process":
        # the steps are light glue around numpy and the in-process embedder: one process is
        # faster on one small machine
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor
    module_name, extra = EXTRAS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise SettingsError(
            f"RAG_EXECUTOR={name} needs the {extra} extra: pip install -e '.[{extra}]'"
        ) from None
    if name == "celery":
        return module.celery_executor.configured(
            {"broker": settings.celery_broker, "backend": settings.celery_backend}
        )
    return module.k8s_job_executor


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
            return (
                f"{variable}={url} cannot be reached ({' '.join(str(exc).split())[:120]}): start Redis "
                "(`make services` starts one on RAG_REDIS_PORT) or set it to a running one"
            )
    return None
