"""What `evaluation_summary` records in the experiment ledger, and shows of it in the UI."""

import dataclasses

import dagster as dg
import pandas as pd

from rag_pipeline.defs.resources import DataStore, QuestionsFile, RetrievalResource
from rag_pipeline.lib.core import clipped
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.evaluation import (
    LEDGER,
    NOT_RECORDED,
    REPAIR,
    experiment_reuse,
    looks_sentence,
    previous_md,
    record_confirmed,
    repair,
)


@logic
def experiment_entries(
    log: dg.DagsterLogManager,
    store: DataStore,
    outcomes: pd.DataFrame,
    questions: pd.DataFrame,
    provenance: dict[str, str],
    retrieval: RetrievalResource,
    questions_file: QuestionsFile,
    confirmed: bool,
) -> dict[str, object]:
    """Records the evaluation in the experiment ledger, its listing repaired first, counting a new
    experiment whose verdict was `confirmed` on its test split, and returns the UI's comparison with
    the experiment built before and how many choices that split has confirmed. The ledger is a record
    nothing the pipeline computes reads: what goes wrong with it is a warning, and the build goes on."""
    root = store.path(LEDGER)
    reranker = f"{retrieval.rerank_protocol}:{retrieval.rerank_model}" if retrieval.rerank_url else ""
    # the test share decides each question's split, which the outcomes record
    ranking = {
        "reranker": reranker,
        "retrieval": dataclasses.asdict(retrieval.settings()),
        "test_share": questions_file.test_share,
    }
    by = "evaluation_summary" if confirmed else None
    try:
        for line in repair(root):
            log.warning(f"experiment ledger: {line}")
        experiment = record_confirmed(root, outcomes, questions, provenance, ranking, by=by)
        said, markdown = previous_md(root)
        found = experiment_reuse(root, experiment)
        looks = looks_sentence(found, questions_file.test_looks)
        if found.moved:
            log.warning(f"experiment ledger: {looks}")
    except (OSError, ValueError) as exc:  # an object store's, Arrow's and JSON's errors are among them
        said = f"{NOT_RECORDED} ({clipped(exc, 300)})"
        log.warning(f"{said}; the build goes on")
        markdown = f"{said[0].upper()}{said[1:]}. `{REPAIR}` rebuilds the ledger's listing."
        looks = ""
    return {"vs previous experiment": said, "experiments": dg.MetadataValue.md(markdown), "looks": looks}
