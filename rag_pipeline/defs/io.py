"""Glue every asset shares: Parquet in and out, outputs versioned by content, library logs in the run log."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import dagster as dg
import pandas as pd

from rag_pipeline.defs.resources import DataStore
from rag_pipeline.lib.incremental import content_version
from rag_pipeline.lib.storage import AnyPath, read_frame, write_frame


class ParquetIOManager(dg.ConfigurableIOManager):
    """DataFrames as Parquet at `<data_dir>/<storage_path>` (the asset's `storage_path` metadata)."""

    store: DataStore

    def _path(self, metadata: Mapping[str, object]) -> AnyPath:
        return self.store.path(str(metadata["storage_path"]))

    def handle_output(self, context: dg.OutputContext, obj: pd.DataFrame) -> None:
        path = self._path(context.definition_metadata)
        write_frame(obj, path)
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path)), "rows": len(obj)})

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        path = self._path(context.upstream_output.definition_metadata)
        if not path.exists():
            raise FileNotFoundError(
                f"{path}: not materialized yet (asset {context.asset_key.to_user_string()})"
            )
        return read_frame(path)


def data_version(frame: pd.DataFrame, columns: list[str] | None = None) -> dg.DataVersion:
    """A version derived from the content: a re-run that produced the same data stales nothing downstream."""
    return dg.DataVersion(content_version(frame, columns or list(frame.columns)))


def versioned(frame: pd.DataFrame, columns: list[str] | None = None, **metadata: object) -> dg.Output:
    """`frame` as the asset's output, with its content data version and metadata."""
    return dg.Output(frame, data_version=data_version(frame, columns), metadata=metadata)


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
