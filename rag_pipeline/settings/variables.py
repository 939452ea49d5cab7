"""How a setting is declared (`var`), and the `RAG_*` variables that are no settings."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag_pipeline.lib.core import values

# `RAG_*` variables read elsewhere that are not settings: `make run`'s verbose switch, the
# differential tests' seeds and sizes, where scripts/services.sh starts its servers, and the build's
# instance a tuning trial's plan reads the measured embedding rate from
OTHER_VARIABLES = frozenset(
    {"RAG_VERBOSE", "RAG_DIFF_SEED", "RAG_DIFF_STEPS", "RAG_SERVICES_DIR", "RAG_PG_PORT", "RAG_BUILD_HOME"}
    | {"RAG_CODE_EDITS", "RAG_CODE_EDITS_SEED"}
)


@dataclass(frozen=True)
class Var:
    name: str
    default: str
    parse: Callable[[str], Any]
    accepted: str
    shared: bool = True


def var(name: str, default: str, parse: Callable[[str], Any], accepted: str, shared: bool = True) -> Any:
    """A setting: the variable that sets it, its default (as the variable would hold it; `{RAG_X}` in
    it is the value of a setting declared before), the parser and what it accepts, in the error a bad
    value gives. `shared`: every process of a run must hold the run's value (`Settings.shared`); false
    for how a process runs or fetches, which no output depends on."""
    return dataclasses.field(metadata={"var": Var(name, default, parse, accepted, shared)})


def timeout(name: str, default: str) -> Any:
    """A server's timeout: seconds per request (how patiently a process fetches: not shared)."""
    parse = values.number(float, 0.001, 3600.0)
    return var(name, default, parse, "seconds per request, > 0 and at most 3600", shared=False)


def retries(name: str) -> Any:
    """How often a failed request to a server is tried again (default 4; not shared)."""
    return var(name, "4", values.number(int, 0, 20), "an integer from 0 to 20", shared=False)


def budget(name: str, unit: str) -> Any:
    """A limit on what a configuration may cost; unset: no limit (None)."""
    return var(name, "", values.optional(values.number(float, 0.0)), f"{unit} >= 0 (unset: no budget)")


def one_of(name: str, default: str, *options: str, shared: bool = True) -> Any:
    """A setting that is one of `options` (`a, b or c`, in the error a bad value gives)."""
    accepted = f"{', '.join(options[:-1])} or {options[-1]}"
    return var(name, default, values.choice(*options), accepted, shared=shared)


def shown(value: object) -> str:
    """A setting's value as a variable would hold it."""
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
