"""How every asset of the project is declared: one decorator with its conventions.

An asset's code version is the fingerprint of its body and of the logic it reaches
(`lib/core/fingerprint.py`: lib/'s code, and what is marked `@logic`), with `logic` (more roots) and
`version` (a rebuild forced where no code changed): no version is written by hand, a change to a
metric re-runs evaluation and what follows, a comment re-runs nothing. The strategy of a lane
asset (its name and chunker version) is part of it. Any other value the body closes over enters as
a setting: the settings an output depends on are one function of the resources (`config`), read
twice: from the resources the definitions are built with, into the code version
(`fingerprint@settings`: the UI shows a settings change as a new code version), and from the run's
resources, so a step under other settings is not reused."""

from collections.abc import Callable, Iterable, Mapping

import dagster as dg

from rag_pipeline.defs.platform.lineage import code_version, given, memoized
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
    logic: Iterable[object] = (),
    version: object = None,
) -> Callable:
    """One asset around `memoized(config, external)`; `checks` are (name, description, blocking);
    a `first` step takes a free process or worker before the other steps ready to start."""
    specs = [dg.AssetCheckSpec(c, asset=name, description=text, blocking=b) for c, text, b in checks]
    lane = (strategy.name, strategy.version) if strategy else ()

    def declare(body: Callable) -> dg.AssetsDefinition:
        spec = dg.AssetSpec(
            name,
            group_name=group,
            code_version=code_version(
                fingerprint([body, *logic], version=version, deps=lane), given(config, resources or {})
            ),
            kinds=set(kinds),
            deps=list(deps),
            metadata={"strategy": strategy.name} if strategy else None,
            description=description,
        )
        # subsettable, so a reused output need not give its checks a result (`lineage.reuse`)
        return dg.multi_asset(
            name=name,
            specs=[spec],
            check_specs=specs or None,
            can_subset=True,
            op_tags={"dagster/priority": "1"} if first else None,
        )(memoized(config, external)(body))

    return declare
