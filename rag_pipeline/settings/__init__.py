"""Every `RAG_*` variable: read here, once, with its one default and its validation.

`Settings.from_env` runs when the code location loads, so a bad value stops `dagster dev`, the
CLI and the tests at once with the variable, the value and what is accepted. Resources take
their defaults from `DEFAULTS`, so run config and the environment agree. A `RAG_*` variable that is
no setting (a typo such as `RAG_EMBEDER`) gets one warning line per process naming the closest one.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_pipeline.lib.core import closest
from rag_pipeline.settings.operations import Asking, Automation, Cluster
from rag_pipeline.settings.paths import (
    BUNDLED_CORPUS,
    BUNDLED_PRICES,
    BUNDLED_QUESTIONS,
    BUNDLED_REPO,
    DEFAULT_DAGSTER_HOME,
    DEFAULT_DATA_DIR,
    PROJECT_ROOT,
)
from rag_pipeline.settings.stages import (
    Answering,
    Chunking,
    Embedding,
    Judging,
    Release,
    Retrieval,
    Sources,
)
from rag_pipeline.settings.variables import OTHER_VARIABLES, Var, shown

_warned: set[str] = set()  # the warnings this process has printed


class SettingsError(ValueError):
    """A variable holds a value the pipeline cannot use."""


@dataclass(frozen=True)
class Settings(
    Asking, Cluster, Automation, Release, Judging, Answering, Retrieval, Embedding, Chunking, Sources
):
    """Every `RAG_*` variable, one field each, declared once in its group (`stages.py`, what the
    outputs are computed from; `operations.py`, how runs are operated). The groups are listed in
    reverse: a dataclass takes its bases' fields from the last base to the first."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """The settings from `env`; an unset or empty variable takes its default."""
        for line in unknown_variables(env):
            if line not in _warned:
                _warned.add(line)
                print(line, file=sys.stderr)
        values, raws = {}, {}
        for name, declared in VARS.items():
            raw = raws[declared.name] = env.get(declared.name) or declared.default.format_map(raws)
            try:
                values[name] = declared.parse(raw)
            except (ValueError, TypeError) as exc:
                detail = f" ({exc})" if str(exc) else ""
                raise SettingsError(
                    f"{declared.name}={raw!r} is not valid: expected {declared.accepted}{detail}"
                ) from None
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    def shared(self) -> dict[str, str]:
        """The shared settings (`Var.shared`) that differ from their defaults, by variable, as text:
        what a run records and every process running one of its steps must hold too. Not the data
        directory: the run names it (`rag/data_dir`), and every step writes there."""
        return {
            declared.name: shown(getattr(self, name))
            for name, declared in VARS.items()
            if declared.shared and name != "data_dir" and getattr(self, name) != getattr(DEFAULTS, name)
        }

    def path_variables(self) -> dict[str, str]:
        """The path-valued variables that are set, as the absolute paths read here: the environment
        of a process started in another directory, so it reads the same files."""
        return {VARS[f].name: getattr(self, f) for f in PATH_FIELDS if getattr(self, f)}


def shared_default(variable: str) -> str:
    """The default of the shared setting `variable`, as `shared` shows values."""
    return next(shown(getattr(DEFAULTS, n)) for n, declared in VARS.items() if declared.name == variable)


# each group of settings, in the order they are listed, and the page of the docs that explains them
GROUPS: dict[type, str] = {
    Sources: "getting-started.md",
    Chunking: "scaling-out.md",
    Embedding: "embedders.md",
    Retrieval: "retrievers.md",
    Answering: "answers.md",
    Judging: "answers.md#judging-answers",
    Release: "releasing.md",
    Automation: "assets.md#sensor-and-nightly-schedule",
    Cluster: "scaling-out.md",
    Asking: "asks.md",
}
VARS: dict[str, Var] = {f.name: f.metadata["var"] for f in dataclasses.fields(Settings)}
PATH_FIELDS = ("notes_repo", "questions", "data_dir", "strategy_file", "judge_labels", "prices")


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """A warning line for each `RAG_*` variable in `env` that is neither a setting nor one of
    `OTHER_VARIABLES`, naming the closest setting."""
    known = {declared.name for declared in VARS.values()}
    read = known | OTHER_VARIABLES
    lines = []
    for name in sorted(env):
        if name.startswith("RAG_") and name not in read:
            near = closest(name, known, within=3)
            hint = (
                f"did you mean {near}?"
                if near
                else "the settings are listed in rag_pipeline/settings/stages.py or operations.py"
            )
            lines.append(f"warning: {name} is not a setting; {hint}")
    return lines


DEFAULTS = Settings.from_env({})


__all__ = [
    "BUNDLED_CORPUS",
    "BUNDLED_PRICES",
    "BUNDLED_QUESTIONS",
    "BUNDLED_REPO",
    "DEFAULTS",
    "DEFAULT_DAGSTER_HOME",
    "DEFAULT_DATA_DIR",
    "GROUPS",
    "OTHER_VARIABLES",
    "PATH_FIELDS",
    "PROJECT_ROOT",
    "VARS",
    "Settings",
    "SettingsError",
    "shared_default",
    "unknown_variables",
]
