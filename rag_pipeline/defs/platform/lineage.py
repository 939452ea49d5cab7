"""Inside a step: the last output again, at once, when nothing the asset reads has changed.

Dagster's automation (`defs/platform/automation.py`) decides which assets a run materializes; a commit's run
holds everything downstream of what it changed, because nobody can know before the run which data
versions will come out unchanged, and Dagster has no early cut-off inside a run. This is that cut-off,
asked of Dagster's own provenance: a step whose asset's latest materialization was made by the
current code version (`get_asset_provenance`), from the current data version of every parent, under
the settings the run's resources give (`config`, the part of the code version after `@`), whose
checks passed and whose recorded outputs are whole in this data directory, returns that output's
data version without reading an input, and records `reused` (the run that made it).
"Materialize all" then costs what changed.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import dagster as dg

from rag_pipeline.defs.platform.internals.execution import quiet_ungated
from rag_pipeline.defs.platform.internals.reads import check_passed, latest_data_version
from rag_pipeline.defs.platform.outputs import damaged, elsewhere, outputs
from rag_pipeline.defs.platform.runs import ended

CONFIG = "config_version"
OUTPUTS = "outputs"
# OUTPUTS is kept in this one JSON entry, the last on the asset's page: bookkeeping, not what a
# person reads there
BOOKKEEPING = "bookkeeping"
REUSED = "reused"
quiet_ungated()  # a reused output gives its checks no result (`reuse`), on purpose


class RunEndedError(RuntimeError):
    """A step of a run that has ended started (queued on a worker before the run was marked failed)."""


def config_digest(*parts: object) -> str:
    """A short digest of the settings an output depends on."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def code_version(base: str, config: str | None = None) -> str:
    """`base@config`: a settings change shows in the UI as a changed code version."""
    return f"{base}@{config}" if config else base


def config_of(version: str | None) -> str | None:
    return version.split("@", 1)[1] if version and "@" in version else None


@dataclass(frozen=True)
class Last:
    """An asset's latest materialization: its run, data version and what it recorded."""

    run_id: str
    data_version: str | None
    metadata: dict[str, dg.MetadataValue]

    def value(self, name: str) -> object:
        return recorded(self.metadata, name)


def recorded(metadata: Mapping[str, dg.MetadataValue], name: str) -> object:
    """A value a materialization recorded: its own metadata entry, else in the bookkeeping entry."""
    entry = metadata.get(name)
    if entry is None and BOOKKEEPING in metadata:
        return metadata[BOOKKEEPING].value.get(name)
    return None if entry is None else entry.value


def last_materialization(instance: dg.DagsterInstance, key: dg.AssetKey) -> Last | None:
    records = instance.fetch_materializations(key, limit=1).records
    if not records:
        return None
    metadata = dict(records[0].asset_materialization.metadata)
    return Last(records[0].run_id, latest_data_version(instance, key), metadata)


def stale_reason(
    context: dg.AssetExecutionContext,
    version: str | None,
    parents: Mapping[dg.AssetKey, str | None],
    *,
    config: str | None,
    external: Mapping[str, object] | None,
    last: Last | None,
) -> str | None:
    """Why the step's asset must be computed, or None when its last output stands: `version` is its
    code version now, `parents` their data versions now, `config` the settings the step runs under,
    `external` what a source asset read outside Dagster."""
    provenance = context.get_asset_provenance(context.asset_key)
    if last is None or provenance is None:
        return "never materialized"
    if provenance.code_version != version:
        return f"code version {provenance.code_version} -> {version}"
    if config is not None and last.value(CONFIG) != config:
        return f"built under other settings ({last.value(CONFIG)}, now {config})"
    for parent, now in parents.items():
        made_from = provenance.input_data_versions.get(parent)
        if made_from is None or made_from.value != now:
            return f"{parent.to_user_string()} changed"
    for name, value in (external or {}).items():
        if last.value(name) != value:
            return f"{name} changed ({last.value(name)} -> {value})"
    failed = [
        key.name for key in context.assets_def.check_keys if check_passed(context.instance, key) is False
    ]
    if failed:
        return f"its check {', '.join(failed)} failed"
    return damaged(last.value(OUTPUTS))


_RUN_VERSIONS: dict[str, dict[dg.AssetKey, str | None]] = {}


def run_versions(context: dg.AssetExecutionContext, parents: Sequence[dg.AssetKey]) -> dict:
    """The parents' latest data versions, fetched once per run and process: a parent materialized
    in this run has finished before any child of it starts, and it runs once per run."""
    if context.run.run_id not in _RUN_VERSIONS:
        _RUN_VERSIONS.clear()  # one run at a time holds the data directory
        _RUN_VERSIONS[context.run.run_id] = {}
    known = _RUN_VERSIONS[context.run.run_id]
    for parent in parents:
        if parent not in known:
            known[parent] = latest_data_version(context.instance, parent)
    return {parent: known[parent] for parent in parents}


def reuse(
    context: dg.AssetExecutionContext, config: str | None = None, external: Mapping[str, object] | None = None
) -> dg.MaterializeResult | None:
    """The last output again when it stands (see `stale_reason`), else None."""
    key = context.asset_key
    last = last_materialization(context.instance, key)
    parents = run_versions(
        context, sorted(context.assets_def.asset_deps[key], key=lambda k: k.to_user_string())
    )
    reason = stale_reason(
        context,
        context.assets_def.code_versions_by_key[key],
        parents,
        config=config,
        external=external,
        last=last,
    )
    reason = reason or elsewhere(last.value(OUTPUTS), str(context.resources.store.path()))
    if reason is not None:
        context.log.info(f"{key.to_user_string()}: {reason}")
        return None
    made_by = last.value(REUSED) or last.run_id
    # what the output was made under, for the next step's `stale_reason`, and no more: its report is
    # the materialization of `made_by`, and this step did none of its work. Its checks get no result
    # (the asset is subsettable): their last evaluation stands, of this very output.
    kept = {BOOKKEEPING: last.metadata[BOOKKEEPING]} if BOOKKEEPING in last.metadata else {}
    # no log line: each is an event row (~10 ms); the `reused` metadata says it
    return dg.MaterializeResult(
        data_version=dg.DataVersion(last.data_version),
        # a link to the run in the UI, whose materialization shows the report
        metadata=stamp(config, external) | kept | {REUSED: dg.MetadataValue.dagster_run(made_by)},
    )


def stamp(config: str | None, external: Mapping[str, object] | None) -> dict[str, object]:
    """What an output is made under: the settings digest and the values read outside Dagster."""
    return dict(external or {}) | ({CONFIG: config} if config is not None else {})


def materialized(
    data_version: str,
    metadata: Mapping[str, object],
    *,
    files: Sequence[object] = (),
    tables: Sequence[tuple[object, str, int]] = (),
    tags: Sequence[tuple[object, str, str, int]] = (),
    checks: Sequence[dg.AssetCheckResult] = (),
    kept: Mapping[str, object] | None = None,
) -> dg.MaterializeResult:
    """An asset's result with what `reuse` and `stale_reason` need recorded beside its metadata
    (`memoized` adds the settings and external values); `kept` is more bookkeeping, JSON values a
    person does not read on the asset's page."""
    kept = {**(kept or {}), OUTPUTS: outputs(*files, tables=tables, tags=tags)}
    extra = {BOOKKEEPING: dg.MetadataValue.json(kept)}
    tidy = {k: rounded(k, v) for k, v in metadata.items()}
    return dg.MaterializeResult(
        data_version=dg.DataVersion(data_version), metadata={**tidy, **extra}, check_results=list(checks)
    )


def rounded(name: str, value: object) -> object:
    """A float as a reader needs it in the UI: milliseconds whole, anything else to 4 significant digits."""
    if not isinstance(value, float) or value != value:
        return value
    return round(value) if "_ms" in name else float(f"{value:.4g}")


def given(fn: Callable[..., object] | None, resources: Mapping[str, object]) -> object:
    """`fn` called with the resources it names, or None without `fn`."""
    if fn is None:
        return None
    return fn(**{name: resources[name] for name in inspect.signature(fn).parameters})


def memoized(
    config: Callable[..., str] | None = None, external: Callable[..., Mapping[str, object]] | None = None
) -> Callable:
    """Wrap an asset body: when its last output stands it is returned (`reuse`) without running,
    else the result is stamped with the settings digest (`config`) and the values read outside
    Dagster (`external`) it ran under. Both take, by name, resources the body takes."""

    def wrap(body: Callable[..., dg.MaterializeResult]) -> Callable[..., dg.MaterializeResult]:
        @functools.wraps(body)
        def step(context: dg.AssetExecutionContext, **resources: object) -> Iterator[dg.MaterializeResult]:
            if not context.selected_asset_keys:
                raise dg.Failure(
                    f"{context.op_def.name}'s checks are evaluated as it is made: select the asset"
                )
            if (
                problem := ended(context.instance.get_run_by_id(context.run.run_id) or context.run)
            ) is not None:
                raise RunEndedError(problem)
            settings, read = given(config, resources), given(external, resources)
            if (kept := reuse(context, settings, read)) is not None:
                yield kept
                return
            result = body(context, **resources)
            metadata = {**(result.metadata or {}), **stamp(settings, read)}
            if BOOKKEEPING in metadata:  # last on the asset's page
                metadata[BOOKKEEPING] = metadata.pop(BOOKKEEPING)
            yield dg.MaterializeResult(
                data_version=result.data_version,
                metadata=metadata,
                check_results=result.check_results,
            )

        return step

    return wrap
