"""The measures two experiments are compared on: one value per configuration and question, read from
the ledger (a name -> meaning table; a new measure is a column and one line here).

Retrieval measures are columns of `<id>/outcomes.parquet` (the headline `hit@2000chars` and `hit@k`),
scored over the answerable questions with `ok` or `carried` gold. Judged measures are columns of
`<id>/judged.parquet` (the judge's share of yes on `faithful`, `correct`, `cites_support`), scored over
every question judged, for the configurations answered.
"""

from __future__ import annotations

import pandas as pd

from rag_pipeline.lib.core import AnyPath, read_frame
from rag_pipeline.lib.evaluation.confirmation import DIGITS
from rag_pipeline.lib.evaluation.experiments import JUDGED, read_outcomes
from rag_pipeline.lib.evaluation.metrics import REPORT_KS
from rag_pipeline.lib.evaluation.ranking import HIT, configurations, on_dev, scored_rows
from rag_pipeline.lib.evaluation.verdict import MEASURE

RETRIEVAL = {HIT: MEASURE, **{f"hit@{k}": f"evidence recall@{k}" for k in REPORT_KS}}
JUDGED_MEASURES = {
    "faithful": "faithful (the judge's share of yes)",
    "correct": "correct (the judge's share of yes)",
    "cites_support": "cites_support (the judge's share of yes)",
}
MEASURES = RETRIEVAL | JUDGED_MEASURES
ANSWER_BASELINES = "-/"  # the answers' baselines (`none`, `oracle`): strategy `-`


def checked(measure: str) -> str:
    if measure not in MEASURES:
        raise ValueError(f"--measure {measure}: not a measure; choose one of {', '.join(MEASURES)}")
    return measure


def measure_rows(root: AnyPath, experiment: str, measure: str) -> pd.DataFrame:
    """The ledger rows of `experiment` that hold `measure` (FileNotFoundError naming what is missing)."""
    if measure in RETRIEVAL:
        return read_outcomes(root, experiment)
    path = root / experiment / JUDGED
    if not path.exists():
        raise FileNotFoundError(f"experiment {experiment} has no judged answers ({path})")
    return read_frame(path)


def scored(rows: pd.DataFrame, measure: str) -> pd.DataFrame:
    """The rows `measure` is computed over."""
    return scored_rows(rows) if measure in RETRIEVAL else rows[rows[measure].notna()]


def ranked(rows: pd.DataFrame, measure: str) -> list[str]:
    """The configurations (`strategy/retriever`) of `rows` best first on the development questions
    (no test question chooses), then any scored on no development question: by the headline (as the
    verdict orders them) for a retrieval measure, by the measure itself for a judged one, the answers'
    baselines (`-/none`, `-/oracle`) after the configurations."""
    if measure in RETRIEVAL:
        first = list(configurations(on_dev(rows))["configuration"])
        return list(dict.fromkeys([*first, *configurations(rows)["configuration"]]))
    judged = scored(rows, measure)
    names = judged["strategy"] + "/" + judged["retriever"]
    chosen = on_dev(judged)
    values = chosen.groupby(names[chosen.index], sort=False)[measure].mean().reindex(names.unique())
    order = pd.DataFrame(
        {"value": values.round(DIGITS), "baseline": values.index.str.startswith(ANSWER_BASELINES)}
    )
    order = order.sort_values(
        ["baseline", "value"], ascending=[True, False], kind="stable", na_position="last"
    )
    return list(order.index)


def shown_value(measure: str) -> str:
    """What a won or lost question lists for each side: a rank, or the judge's score."""
    return "first_evidence_rank" if measure in RETRIEVAL else measure
