"""A search space of chunking and retrieval settings, declared in a TOML file, and the trials drawn
from it.

    [[strategy]]                 # one table per kind; each parameter a value or a list of values
    kind = "fixed"
    size = [300, 500, 800]
    overlap = [0, 100]

    [retrieval]                  # left out: the value the settings give (RAG_CANDIDATE_K, ...)
    candidate_k = [30, 50]
    rrf_k = [30, 60]
    dense_weight = [0.3, 0.5, 0.7]
    context_k = [5]

A point is one strategy (a kind and one value of each of its parameters) with one value of each
retrieval setting; points the strategy file or the retrieval settings would refuse (an overlap not
below the size, `candidate_k` below `context_k`) are left out. A trial is a point drawn at random.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rag_pipeline.lib.chunking import STRATEGIES, StrategyError, read_toml, strategy_from_table
from rag_pipeline.lib.evaluation.ranking import best_on_dev as best_of
from rag_pipeline.lib.evaluation.versus import Comparison, Side, compare
from rag_pipeline.lib.questions import TEST
from rag_pipeline.lib.retrieval import RetrievalSettings

# the retrieval settings a space may search, and the variable that sets each
RETRIEVAL = {
    "candidate_k": "RAG_CANDIDATE_K",
    "rrf_k": "RAG_RRF_K",
    "dense_weight": "RAG_DENSE_WEIGHT",
    "context_k": "RAG_CONTEXT_K",
}
SEARCHED_KINDS = ("fixed", "section", "section-split", "recursive")  # `python` has no parameter to vary


class SpaceError(ValueError):
    """The space file cannot be searched; the message names the file and the table or key."""


@dataclass(frozen=True)
class Trial:
    """One point of the space: a `[[strategy]]` table without its name, and retrieval settings."""

    strategy: tuple[tuple[str, object], ...]  # (parameter, value), `kind` first
    retrieval: tuple[tuple[str, float | int], ...]

    @property
    def name(self) -> str:
        """The strategy's name in the trial's strategy file, e.g. `tune-fixed-500-100`."""
        return "-".join(["tune", *(str(v) for _, v in self.strategy)])

    def settings(self) -> dict[str, object]:
        return {"strategy": dict(self.strategy), **dict(self.retrieval)}

    def strategy_toml(self) -> str:
        """A strategy file holding this trial's strategy alone."""
        lines = ["[[strategy]]", f'name = "{self.name}"']
        lines += [f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}" for k, v in self.strategy]
        return "\n".join(lines) + "\n"

    def env(self) -> dict[str, str]:
        """The variables that set this trial's retrieval settings."""
        return {RETRIEVAL[k]: str(v) for k, v in self.retrieval}

    def built_in(self) -> str | None:
        """The built-in strategy that makes exactly this trial's chunks (the same kind, parameters and
        code: the same version), if one does."""
        made = strategy_from_table({"name": self.name, **dict(self.strategy)}, self.name)
        return next((name for name, s in STRATEGIES.items() if s.version == made.version), None)


def adoption(trial: Trial, retriever: str, strategy_file: Path, strategies: str) -> dict[str, str]:
    """The variables that serve `trial`'s configuration with `retriever` as tune measured it (its
    `best.env`): its strategy (the built-in one that makes its chunks, else `strategy_file`, which holds
    it, added to RAG_STRATEGIES when that names some), its retrieval settings, and the configuration as
    the verdict's kept choice (RAG_CHOSEN_RUN: other configurations, which no trial measured under
    these settings, do not take its place) and as the one served (RAG_RELEASE_RUN)."""
    name = trial.built_in() or trial.name
    run = f"{name}/{retriever}"
    chosen = [n.strip() for n in strategies.split(",") if n.strip()]
    env = {} if trial.built_in() else {"RAG_STRATEGY_FILE": str(strategy_file)}
    if chosen and name not in chosen:
        env["RAG_STRATEGIES"] = ",".join([*chosen, name])
    return env | trial.env() | {"RAG_CHOSEN_RUN": run, "RAG_RELEASE_RUN": run}


def _values(where: str, key: str, value: object, kinds: tuple[type, ...]) -> list:
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, kinds) for v in values):
        raise SpaceError(f"{where}: `{key}` must be a value or a non-empty list of values, not {value!r}")
    return list(dict.fromkeys(values))


def _strategies(path: str, tables: object) -> list[tuple[tuple[str, object], ...]]:
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise SpaceError(f"{path}: a space holds one or more [[strategy]] tables")
    points = []
    for i, table in enumerate(tables, start=1):
        where = f"{path}: [[strategy]] #{i}"
        kind = table.get("kind")
        if kind not in SEARCHED_KINDS:
            raise SpaceError(f"{where}: `kind` must be one of {', '.join(SEARCHED_KINDS)}, not {kind!r}")
        keys = [k for k in table if k != "kind"]
        lists = [_values(where, k, table[k], (int,)) for k in keys]
        valid, first_error = [], None
        for values in itertools.product(*lists):
            point = (("kind", kind), *zip(keys, values))
            try:  # under a name of its own: a value that makes no name (`-5`) is named as written
                strategy_from_table({"name": "tune", **dict(point)}, where)
            except StrategyError as exc:
                first_error = first_error or exc
                continue
            valid.append(point)
        if not valid:
            raise SpaceError(str(first_error))
        points += valid
    return points


def _retrieval(path: str, table: object) -> list[tuple[tuple[str, float | int], ...]]:
    table = table if table is not None else {}
    if not isinstance(table, dict) or set(table) - set(RETRIEVAL):
        raise SpaceError(f"{path}: [retrieval] may hold {', '.join(RETRIEVAL)} and nothing else")
    where = f"{path}: [retrieval]"
    lists = [
        _values(where, k, table[k], (int,) if k.endswith("_k") and k != "rrf_k" else (int, float))
        for k in table
    ]
    points = []
    for values in itertools.product(*lists):
        chosen = dict(zip(table, values))
        if not 0 <= chosen.get("dense_weight", 0.5) <= 1 or chosen.get("rrf_k", 60) < 0:
            raise SpaceError(f"{where}: dense_weight is a share from 0 to 1 and rrf_k a number >= 0")
        try:
            RetrievalSettings(**chosen)
        except ValueError:
            continue  # candidate_k below context_k (or rerank_k): not a point
        points.append(tuple(chosen.items()))
    if not points:
        raise SpaceError(f"{where}: no combination has candidate_k >= 20 >= context_k >= 1")
    return points


def read_space(path: str | Path) -> list[Trial]:
    """Every point of the space in `path`, in the file's order."""
    data = read_toml(path, "space file", SpaceError)
    extra = sorted(set(data) - {"strategy", "retrieval"})
    if extra:
        raise SpaceError(
            f"{path}: unknown table(s) {', '.join(extra)}; a space holds [[strategy]] and [retrieval]"
        )
    strategies, retrieval = (
        _strategies(str(path), data.get("strategy")),
        _retrieval(str(path), data.get("retrieval")),
    )
    return [Trial(s, r) for s in strategies for r in retrieval]


def draw(points: list[Trial], budget: int, seed: int) -> list[Trial]:
    """At most `budget` distinct points at random (the same ones for the same seed), grouped by
    strategy so that a strategy's chunks are built once and its trials follow each other."""
    drawn = random.Random(seed).sample(points, min(budget, len(points)))
    order = {p.strategy: n for n, p in reversed(list(enumerate(drawn)))}
    return sorted(drawn, key=lambda p: order[p.strategy])


def best_on_dev(rows: pd.DataFrame) -> pd.Series:
    """The best configuration of an experiment's ledger rows on its development questions (as the
    verdict orders them): `configuration`, `value`, `mrr@10`, `n_questions`."""
    best = best_of(rows)
    if best is None or "split" not in rows:
        raise ValueError("no answerable development question was scored: nothing to choose on")
    return best


def on_test(side: Side) -> Side:
    """The side with its test questions' rows alone."""
    return dataclasses.replace(side, rows=side.rows[side.rows["split"] == TEST])


def confirm_on_test(chosen: Side, against: Side) -> Comparison:
    """`chosen` against `against` on the test questions both scored: the one look at the test split."""
    return compare(on_test(against), on_test(chosen))
