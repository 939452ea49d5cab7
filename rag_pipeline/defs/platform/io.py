"""Library log lines in the run log."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg


class _ToDagster(logging.Handler):
    def __init__(self, log: dg.DagsterLogManager):
        super().__init__(logging.INFO)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        level = "warning" if record.levelno >= logging.WARNING else "info"
        getattr(self.log, level)(record.getMessage())


@contextmanager
def forward_logs(context: dg.AssetExecutionContext) -> Iterator[None]:
    """The library's log lines (waits on servers, retries) go to the run's log while the block runs."""
    logger = logging.getLogger("rag_pipeline")
    handler = _ToDagster(context.log)
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
