"""The run launcher's module as the `dagster.yaml` files `make` wrote before the platform wing name
it (`run_launcher: module: rag_pipeline.defs.dagster_internals`): `make` never rewrites an existing
one, so that path keeps loading. New files name `rag_pipeline.defs.platform.launcher`."""

from rag_pipeline.defs.platform.launcher import LocalRunLauncher

__all__ = ["LocalRunLauncher"]
