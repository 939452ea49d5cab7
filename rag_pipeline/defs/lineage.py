"""Whether an asset is fresh, and reusing its last output when it is: one rule for the runner, the
sensor, the schedule and every step.

An asset is fresh when its last materialization was made by the current code version, under the
settings it records (`config_version`, the part of its code version after `@`), from the current
data version of every parent, and every output it recorded is still there and readable. A step
whose asset is fresh returns at once with its last data version, metadata and check results, so
"Materialize all" costs what changed; the runner and the sensor run only what is stale and all
that lies downstream of it, in one run, so no asset runs while one of its ancestors is stale.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import dagster as dg

from rag_pipeline.defs.outputs import damaged, outputs

DATA_VERSION = "dagster/data_version"
CODE_VERSION = "dagster/code_version"
INPUT_VERSION = "dagster/input_data_version/"
INITIAL = "INITIAL"  # Dagster's version of a source never observed
CONFIG = "config_version"
OUTPUTS = "outputs"
CHECKS = "checks"
REUSED = "reused"
FETCH = object()  # stale_reason: fetch the latest materialization
# metadata that counts what a run did, not what its output holds: a reused output did none of it
WORK = (
    "texts_embedded",
    "queries_embedded",
    "prompts_asked",
    "notes_added",
    "notes_changed",
    "notes_removed",
)
WORK += ("chunks_new", "chunks_removed", "rows_added", "rows_removed", "rows_updated", "ids_repaired")
ALL_REUSED = {"vectors_reused": "vectors", "notes_unchanged": "notes", "chunks_reused": "chunks"}


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
    """An asset's latest materialization: what it was made from and what it left behind."""

    run_id: str
    code_version: str | None
    inputs: dict[str, str]
    data_version: str | None
    metadata: dict[str, dg.MetadataValue]

    def value(self, name: str) -> object:
        entry = self.metadata.get(name)
        return None if entry is None else entry.value


def last_materialization(instance: dg.DagsterInstance, key: dg.AssetKey) -> Last | None:
    records = instance.fetch_materializations(key, limit=1).records
    if not records:
        return None
    event = records[0].asset_materialization
    tags = dict(event.tags or {})
    inputs = {k.removeprefix(INPUT_VERSION): v for k, v in tags.items() if k.startswith(INPUT_VERSION)}
    return Last(
        records[0].run_id, tags.get(CODE_VERSION), inputs, tags.get(DATA_VERSION), dict(event.metadata)
    )


def latest_version(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """The data version a materialization of a child would record for `key` now: its latest
    materialization's, else its latest observation's, else `INITIAL` (a source never observed)."""
    last = last_materialization(instance, key)
    if last is not None:
        return last.data_version
    records = instance.fetch_observations(key, limit=1).records
    return (records[0].asset_observation.tags or {}).get(DATA_VERSION, INITIAL) if records else INITIAL


def stale_reason(
    instance: dg.DagsterInstance,
    key: dg.AssetKey,
    version: str | None,
    parents: Sequence[dg.AssetKey],
    *,
    current: Mapping[dg.AssetKey, str] | None = None,
    config: str | None = None,
    external: Mapping[str, object] | None = None,
    last: Last | object | None = FETCH,
) -> str | None:
    """Why `key` is stale, or None when it is fresh. `current` holds parent versions known better
    than the instance does (sources just observed), `config` the settings the step runs under
    (default: those its code version names), `external` what a source asset read outside Dagster,
    `last` the asset's latest materialization when the caller has it (default: fetched)."""
    last = last_materialization(instance, key) if last is FETCH else last
    if last is None:
        return "never materialized"
    if last.code_version != version:
        return f"code version {last.code_version} -> {version}"
    config = config if config is not None else config_of(version)
    if config is not None and last.value(CONFIG) != config:
        return f"built under other settings ({last.value(CONFIG)}, now {config})"
    for parent in parents:
        now = (current or {}).get(parent) or latest_version(instance, parent)
        if last.inputs.get(parent.to_user_string()) != now:
            return f"{parent.to_user_string()} changed"
    for name, value in (external or {}).items():
        if last.value(name) != value:
            return f"{name} changed ({last.value(name)} -> {value})"
    return damaged(last.value(OUTPUTS))


def checks_metadata(results: Sequence[dg.AssetCheckResult]) -> dict[str, dg.MetadataValue]:
    """The check results, kept in the materialization so that a reused output replays them."""
    kept = {
        r.check_name: {
            "passed": r.passed,
            "severity": r.severity.value,
            "metadata": {k: str(getattr(v, "value", v)) for k, v in (r.metadata or {}).items()},
        }
        for r in results
    }
    return {CHECKS: dg.MetadataValue.json(kept)}


_RUN_VERSIONS: dict[str, dict[dg.AssetKey, str | None]] = {}


def run_versions(context: dg.AssetExecutionContext, parents: Sequence[dg.AssetKey]) -> dict:
    """The parents' latest data versions, fetched once per run and process: a parent materialized
    in this run has finished before any child of it starts, and it runs once per run."""
    if context.run_id not in _RUN_VERSIONS:
        _RUN_VERSIONS.clear()  # one run at a time holds the data directory
        _RUN_VERSIONS[context.run_id] = {}
    known = _RUN_VERSIONS[context.run_id]
    for parent in parents:
        if parent not in known:
            known[parent] = latest_version(context.instance, parent)
    return {parent: known[parent] for parent in parents}


def reuse(
    context: dg.AssetExecutionContext, config: str | None = None, external: Mapping[str, object] | None = None
) -> dg.MaterializeResult | None:
    """The last output again when the asset is fresh (see `stale_reason`), else None."""
    key = context.asset_key
    version = context.assets_def.code_versions_by_key[key]
    parents = sorted(context.assets_def.asset_deps[key], key=lambda k: k.to_user_string())
    last = last_materialization(context.instance, key)
    reason = stale_reason(
        context.instance,
        key,
        version,
        parents,
        current=run_versions(context, parents),
        config=config,
        external=external,
        last=last,
    )
    if reason is not None:
        context.log.info(f"{key.to_user_string()}: {reason}")
        return None
    kept = last.value(CHECKS) or {}
    replayed = [
        dg.AssetCheckResult(
            check_name=name,
            passed=check["passed"],
            severity=dg.AssetCheckSeverity(check["severity"]),
            metadata=check["metadata"] | {"reused from run": last.run_id},
        )
        for name, check in kept.items()
    ]
    metadata = {k: v for k, v in last.metadata.items() if k != REUSED} | {REUSED: last.run_id}
    metadata |= {k: 0 for k in WORK if k in metadata}
    metadata |= {
        k: last.metadata[total] for k, total in ALL_REUSED.items() if k in metadata and total in metadata
    }
    # no log line: each is an event row (~10 ms); the `reused` metadata says it
    return dg.MaterializeResult(
        data_version=dg.DataVersion(last.data_version), metadata=metadata, check_results=replayed
    )


def materialized(
    data_version: str,
    metadata: Mapping[str, object],
    *,
    files: Sequence[object] = (),
    tables: Sequence[tuple[object, str, int]] = (),
    tags: Sequence[tuple[object, str, str, int]] = (),
    checks: Sequence[dg.AssetCheckResult] = (),
) -> dg.MaterializeResult:
    """An asset's result with what `reuse` and `stale_reason` need recorded beside its metadata
    (`memoized` adds the settings and external values)."""
    extra = {OUTPUTS: outputs(*files, tables=tables, tags=tags), **checks_metadata(checks)}
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
    """Wrap an asset body: when its asset is fresh it returns the last output (`reuse`) without
    running, else its result is stamped with the settings digest (`config`) and the values read
    outside Dagster (`external`) it ran under. Both take, by name, resources the body takes."""

    def wrap(body: Callable[..., dg.MaterializeResult]) -> Callable[..., dg.MaterializeResult]:
        @functools.wraps(body)
        def step(context: dg.AssetExecutionContext, **resources: object) -> dg.MaterializeResult:
            settings, read = given(config, resources), given(external, resources)
            if (kept := reuse(context, settings, read)) is not None:
                return kept
            result = body(context, **resources)
            stamp = dict(read or {}) | ({CONFIG: settings} if settings is not None else {})
            return dg.MaterializeResult(
                data_version=result.data_version,
                metadata={**(result.metadata or {}), **stamp},
                check_results=result.check_results,
            )

        return step

    return wrap
