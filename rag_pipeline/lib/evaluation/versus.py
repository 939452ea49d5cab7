"""Two experiments of the ledger compared question by question on one measure (measures.py; the
headline by default): on the questions both scored, the measure (and, for retrieval, recall@k) of
each, the paired difference and its randomisation p-value, and the questions one gets and the other
misses; across several configurations, Holm-corrected p-values."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.evaluation.experiments import read_current, read_index
from rag_pipeline.lib.evaluation.measures import (
    MEASURES,
    RETRIEVAL,
    measure_rows,
    ranked,
    scored,
    shown_value,
)
from rag_pipeline.lib.evaluation.metrics import REPORT_KS
from rag_pipeline.lib.evaluation.ranking import HIT
from rag_pipeline.lib.evaluation.settings_diff import changed, embedder_name
from rag_pipeline.lib.evaluation.significance import holm, p_text, p_value, paired_randomization
from rag_pipeline.lib.evaluation.verdict import MEASURE

# question id, and in a and in b its first evidence rank (retrieval) or its score (judged)
Ranked = tuple[str, object, object]


class UnknownReference(ValueError):
    """An `experiment[:strategy/retriever]` reference names nothing in the ledger."""


@dataclass(frozen=True)
class Side:
    """One configuration of one experiment: its ledger rows and its settings."""

    experiment: str
    configuration: str  # strategy/retriever
    rows: pd.DataFrame
    settings: dict
    measure: str = HIT

    @property
    def label(self) -> str:
        return f"{self.experiment}:{self.configuration}"

    @property
    def value(self) -> float:
        """The measure over the questions it scored."""
        return float(scored(self.rows, self.measure)[self.measure].astype(float).mean())


@dataclass
class Comparison:
    a: str
    b: str
    n_questions: int  # scored in both
    n_a: int  # scored in a
    n_b: int
    value_a: float
    value_b: float
    p_value: float
    recall: dict[int, tuple[float, float]]  # k -> (a, b)
    won: list[Ranked]  # b finds (within the headline budget), a misses
    lost: list[Ranked]
    corrected: int = 0  # the number of comparisons its p-value is Holm-corrected across (0: none)
    p_unadjusted: float = field(default=float("nan"))
    measure: str = MEASURE  # what it is compared on, as people read it
    chosen_on: str | None = None  # "dev": the configuration is B's best on the development questions

    @property
    def delta(self) -> float:
        return self.value_b - self.value_a

    def as_json(self) -> dict[str, object]:
        out = {
            "a": self.a,
            "b": self.b,
            "measure": self.measure,
            "n_questions": self.n_questions,
            "value_a": round(self.value_a, 4),
            "value_b": round(self.value_b, 4),
            "delta": round(self.delta, 4),
            "p_value": p_value(self.p_value),
            "won": [q for q, _, _ in self.won],
            "lost": [q for q, _, _ in self.lost],
        }
        if self.corrected:
            out |= {"p_value_unadjusted": p_value(self.p_unadjusted), "correction": "holm"}
        if self.chosen_on:
            out["chosen_on"] = self.chosen_on
        return out


def experiment_sides(
    root: AnyPath,
    name: str,
    index: pd.DataFrame | None = None,
    reference: str | None = None,
    measure: str = HIT,
) -> dict[str, Side]:
    """Every configuration of experiment `name` scored on `measure`, best first: `name` is an id or a
    prefix of one, `current` (or empty: the build whose reports are on disk) or `previous` (the build
    before it). `reference`: what the user wrote, for the error."""
    index = read_index(root) if index is None else index
    name, reference = name.strip() or "current", reference or name
    if name in ("current", "previous"):
        found = read_current(root)["id" if name == "current" else "previous"]
        if found is None:
            what = "no build" if name == "current" else "no build before the current one"
            raise UnknownReference(f"{name}: {what} recorded in {root} yet; run the pipeline (make run)")
        matches = index[index["id"] == found]
    else:
        matches = index[index["id"].str.startswith(name)]
    if len(matches) != 1:
        known = ", ".join(index["id"].iloc[-5:]) or "none"
        why = "no experiment" if matches.empty else f"{len(matches)} experiments (give more of the id)"
        raise UnknownReference(
            f"{reference!r}: {why} in {root} matches {name!r} (latest: {known}); "
            "see `python -m rag_pipeline.experiments list`"
        )
    row = matches.iloc[0]
    try:
        rows = measure_rows(root, row["id"], measure)
    except FileNotFoundError as exc:
        missing = (
            str(exc) if measure not in RETRIEVAL else f"the outcomes of experiment {row['id']} are missing"
        )
        raise UnknownReference(f"{reference!r}: {missing}") from None
    settings = json.loads(row["settings"])
    sides = {}
    for configuration in ranked(rows, measure):
        strategy, retriever = configuration.split("/", 1)
        chosen = rows[(rows["strategy"] == strategy) & (rows["retriever"] == retriever)]
        sides[configuration] = Side(row["id"], configuration, chosen, settings, measure)
    return sides


def resolve(root: AnyPath, reference: str, index: pd.DataFrame | None = None, measure: str = HIT) -> Side:
    """`experiment[:strategy/retriever]` (see `experiment_sides`); the configuration `strategy/retriever`
    (a strategy alone: dense), by default the experiment's best."""
    name, _, configuration = reference.partition(":")
    sides = experiment_sides(root, name, index, reference, measure)
    wanted = configuration.strip() or next(iter(sides), "")
    wanted = wanted if "/" in wanted else f"{wanted}/dense"
    if wanted not in sides:
        experiment = next(iter(sides.values())).experiment if sides else name
        raise UnknownReference(
            f"{reference!r}: experiment {experiment} has no scored configuration {wanted!r} "
            f"(it has: {', '.join(sides) or 'none'})"
        )
    return sides[wanted]


def resolve_pair(root: AnyPath, a: str, b: str, measure: str = HIT) -> tuple[Side, Side]:
    """Two references compared on one configuration where they can be: a reference without a
    configuration takes the other's; when neither names one, both take B's best on the development
    questions (A its own best there when it did not score that configuration)."""
    index = read_index(root)
    (name_a, _, conf_a), (name_b, _, conf_b) = a.partition(":"), b.partition(":")
    right = resolve(root, b if conf_b or not conf_a else f"{name_b}:{conf_a}", index, measure)
    if conf_a:
        return resolve(root, a, index, measure), right
    sides = experiment_sides(root, name_a, index, a, measure)
    return sides.get(right.configuration) or resolve(root, a, index, measure), right


def _value(value) -> object:
    return None if pd.isna(value) else value.item() if hasattr(value, "item") else value


def compare(a: Side, b: Side) -> Comparison:
    """`b` against `a` on `a`'s measure, on the questions both scored: the same id, the same question
    and evidence (`question_sha256`), and scored in both (retrieval: answerable, ok or carried gold).
    A question is won when b gets it (a hit, or a judged yes by the majority of the judge's repeats)
    and a does not."""
    m = a.measure
    sa, sb = scored(a.rows, m), scored(b.rows, m)
    both = sa.merge(sb, on=["question_id", "question_sha256"], suffixes=("_a", "_b"))
    va, vb = both[f"{m}_a"].astype(float), both[f"{m}_b"].astype(float)
    shown = shown_value(m)

    def listed(mask: pd.Series) -> list[Ranked]:
        chosen = both[mask.to_numpy()]
        return [
            (q, _value(x), _value(y))
            for q, x, y in zip(chosen["question_id"], chosen[f"{shown}_a"], chosen[f"{shown}_b"])
        ]

    p = paired_randomization(vb.to_numpy(), va.to_numpy())
    return Comparison(
        a=a.label,
        b=b.label,
        n_questions=len(both),
        n_a=len(sa),
        n_b=len(sb),
        value_a=float(va.mean()) if len(both) else float("nan"),
        value_b=float(vb.mean()) if len(both) else float("nan"),
        p_value=p,
        p_unadjusted=p,
        recall={
            k: (float(both[f"hit@{k}_a"].astype(bool).mean()), float(both[f"hit@{k}_b"].astype(bool).mean()))
            for k in REPORT_KS
        }
        if len(both) and m in RETRIEVAL
        else {},
        won=listed((vb >= 0.5) & (va < 0.5)),
        lost=listed((va >= 0.5) & (vb < 0.5)),
        measure=MEASURES[m],
    )


def holm_corrected(comparisons: list[Comparison]) -> list[Comparison]:
    """The same comparisons with their p-values Holm-corrected across all of them."""
    adjusted = holm([c.p_unadjusted for c in comparisons])
    for c, p in zip(comparisons, adjusted):
        c.p_value, c.corrected = p, len(comparisons)
    return comparisons


def compare_all(root: AnyPath, a: str, b: str, measure: str = HIT) -> list[Comparison]:
    """Every configuration the two experiments share, Holm-corrected across them."""
    index = read_index(root)
    left, right = (experiment_sides(root, ref.partition(":")[0], index, ref, measure) for ref in (a, b))
    return holm_corrected([compare(left[c], right[c]) for c in left if c in right])


def names(a: Side, b: Side) -> tuple[str, str]:
    """What to call the two sides in one sentence: by the embedder when it changed, else by the commit,
    else by the one setting that changed, else by experiment id."""
    diff = changed(a.settings, b.settings)
    if a.experiment == b.experiment:
        return a.configuration, b.configuration
    known = {k: v for k, v in diff.items() if None not in v}  # a recovered row's settings are unknown
    if "embedding_version" in known:
        return embedder_name(a.settings["embedding_version"]), embedder_name(b.settings["embedding_version"])
    if "commit" in known:
        return f"commit {a.settings['commit'][:12]}", f"commit {b.settings['commit'][:12]}"
    if len(diff) == 1:
        (key, (va, vb)), *_ = diff.items()
        return f"{key} {va}", f"{key} {vb}"
    return a.experiment, b.experiment


def sentence(c: Comparison, a_name: str, b_name: str) -> str:
    """`b vs a: +0.08 (p = 0.01), 12 questions won, 3 lost`."""
    p = p_text(c.p_value) + (" Holm-corrected" if c.corrected else "")
    return f"{b_name} vs {a_name}: {c.delta:+.2f} ({p}), {len(c.won)} questions won, {len(c.lost)} lost"


def ranked_list(items: list[Ranked]) -> str:
    def show(value: object) -> str:
        return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)

    return ", ".join(f"{q} ({show(ra)} → {show(rb)})" for q, ra, rb in items) or "none"


def previous_md(root: AnyPath) -> tuple[str, str]:
    """The UI's comparison of the current experiment with the one built before it: (one sentence,
    Markdown with what changed, both headline values and the questions newly found and missed)."""
    current = read_current(root)
    if current["previous"] is None:
        return "first experiment", f"Experiment `{current['id']}`: the first recorded, nothing to compare."
    try:
        before, after = resolve_pair(root, "previous", "current")
    except UnknownReference as exc:
        return "no comparison", f"Experiment `{current['id']}`: {exc}"
    c = compare(before, after)
    a_name, b_name = names(before, after)
    said = sentence(c, a_name, b_name)
    diff = changed(before.settings, after.settings)
    lines = [
        f"**{said}** on {MEASURE}, over the {c.n_questions} questions both scored "
        f"(the build before scored {c.n_a}, this one {c.n_b}); paired randomisation test.",
        "",
        "| | before | after |",
        "|---|---|---|",
        f"| experiment | `{before.experiment}` | `{after.experiment}` |",
        f"| configuration (this build's best on the development questions) | {before.configuration} | "
        f"{after.configuration} |",
        f"| {MEASURE} | {c.value_a:.3f} | {c.value_b:.3f} |",
        *(f"| evidence recall@{k} | {ra:.3f} | {rb:.3f} |" for k, (ra, rb) in c.recall.items()),
        "",
        "What changed: "
        + ("; ".join(f"`{k}` {va} → {vb}" for k, (va, vb) in diff.items()) or "nothing recorded"),
        "",
        f"Newly found ({len(c.won)}; first evidence rank before → after): {ranked_list(c.won)}",
        "",
        f"Newly missed ({len(c.lost)}): {ranked_list(c.lost)}",
    ]
    return said, "\n".join(lines)
