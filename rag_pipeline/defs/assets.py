"""How every asset of the project is declared: one decorator with its conventions.

An asset's code version is the fingerprint of its body and all of the project's code it runs
(`lib/core/fingerprint.py`), computed when the definitions load: no version is written by hand, a
change to a metric re-runs evaluation and what follows, a comment re-runs nothing. The settings an
output depends on are one function of the resources (`config`), read twice: from the resources the
definitions are built with, into the code version (`fingerprint@settings`: the UI shows a settings
change as a new code version), and from the run's resources, so a step under other settings is not
reused."""

from collections.abc import Callable, Iterable, Mapping

import dagster as dg

from rag_pipeline.defs.lineage import code_version, given, memoized
from rag_pipeline.lib.chunking import Strategy
from rag_pipeline.lib.core.fingerprint import fingerprint


def stage_asset(
    name: str,
    *,
    group: str,
    deps: Iterable[object],
    description: str,
    resources: Mapping[str, object] | None = None,
    config: Callable[..., str] | None = None,
    external: Callable[..., Mapping[str, object]] | None = None,
    kinds: Iterable[str] = ("parquet",),
    strategy: Strategy | None = None,
    checks: Iterable[tuple[str, str, bool]] = (),
    first: bool = False,
) -> Callable:
    """`@dg.asset` around `memoized(config, external)`; `checks` are (name, description, blocking);
    a `first` step takes a free process or worker before the other steps ready to start."""
    specs = [dg.AssetCheckSpec(c, asset=name, description=text, blocking=b) for c, text, b in checks]

    def declare(body: Callable) -> dg.AssetsDefinition:
        return dg.asset(
            name=name,
            group_name=group,
            code_version=code_version(fingerprint([body]), given(config, resources or {})),
            kinds=set(kinds),
            deps=list(deps),
            metadata={"strategy": strategy.name} if strategy else None,
            check_specs=specs or None,
            op_tags={"dagster/priority": "1"} if first else None,
            description=description,
        )(memoized(config, external)(body))

    return declare
