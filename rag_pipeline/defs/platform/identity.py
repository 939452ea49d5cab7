"""One embedder for every process of a run, compared by what it is, not where it is asked: the run's
own process records its embedder's identity (`embedding_version`: backend, model, the model's digest
as its server reports it, dimension, prefixes) in the run (`EMBEDDER_TAG`) before the first step, and
a step in another process (a Celery worker, a pod) whose embedder is another refuses to embed
(`EmbedderResource.get`). `RAG_EMBED_URL` is not compared: each machine may ask its own server (an
Ollama per node) for the same model."""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg

from rag_pipeline.defs.platform.internals.execution import around_runs
from rag_pipeline.defs.platform.runs import EMBEDDER_TAG
from rag_pipeline.defs.resources import EmbedderResource
from rag_pipeline.lib.core import ServerError
from rag_pipeline.lib.embedding import EmbeddingError


def identified(executor_def: dg.ExecutorDefinition, embedder: EmbedderResource) -> dg.ExecutorDefinition:
    """`executor_def`, each of whose runs records the identity of `embedder` first; the in-process
    executor as it is (its steps run in the run's process)."""
    if executor_def is dg.in_process_executor:
        return executor_def

    def recorded(instance: dg.DagsterInstance, run: dg.DagsterRun, log, events: Iterator) -> Iterator:
        if "embedder" in (run.run_config.get("resources") or {}):
            log.info("the run configures its own embedder: its steps' processes compare none")
        else:
            try:
                instance.add_run_tags(run.run_id, {EMBEDDER_TAG: embedder.get().embedding_version})
            except (EmbeddingError, ServerError, OSError) as exc:  # its server down: the steps will say
                log.warning(
                    f"the embedder's identity is not known ({exc}): its steps' processes compare none"
                )
        yield from events

    return around_runs(executor_def, recorded)
