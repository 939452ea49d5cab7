"""The costs stage as one call: every configuration of every strategy asked each question once as
an application asks it, on the served tables (`costs.py` measures one strategy)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.embedding import Embedder
from rag_pipeline.lib.evaluation import Ranking
from rag_pipeline.lib.questions import askers
from rag_pipeline.lib.retrieval import ChunkIndex, TokenStore, plan
from rag_pipeline.lib.serving.costs import Asked, configuration_costs, embedding_times
from rag_pipeline.lib.serving.live import table_key
from rag_pipeline.lib.serving.store import AnnConfig, Store


def asked_questions(
    questions: pd.DataFrame, vectors: np.ndarray, model: Embedder, timed: AnyPath
) -> list[Asked]:
    """Each question as every strategy is asked it: its text, its asker's groups (None: may read
    every row), its query `vectors` and its embedding's time by `model` (`embedding_times`, kept
    in `timed`)."""
    groups = askers(questions)
    texts = questions["q"].tolist()
    times = embedding_times(timed, model.embedding_version, texts, lambda t: model.embed(t, "query"))
    return [Asked(*a) for a in zip(texts, groups, vectors, *zip(*times))] if texts else []


def measured_costs(
    strategies: Sequence[str],
    read_chunks: Callable[[str], pd.DataFrame],
    tables: Store,
    asked: Sequence[Asked],
    ranking: Ranking,
    ann: AnnConfig,
    data_dir: AnyPath,
) -> pd.DataFrame:
    """Per configuration of each strategy (`read_chunks(strategy)` its chunks, searched densely on
    its served table in `tables`): `COST_COLUMNS`; BM25's tokens kept under `data_dir/tokens`."""
    retrievers = [spec.name for spec in plan(list(ranking.retrievers))[0]]
    frames = []
    for name in strategies:
        chunks = read_chunks(name)
        index = ChunkIndex(
            chunks=chunks,
            vectors=np.zeros((len(chunks), 0), np.float32),  # dense ranks on the served table
            analyzer=ranking.analyzer,
            token_store=TokenStore(data_dir / "tokens", ranking.analyzer),
        )
        table = tables.open(table_key(name))
        frames.append(
            configuration_costs(
                table, index, name, retrievers, asked, ranking.settings, ranking.reranker, ann
            )
        )
    return pd.concat(frames, ignore_index=True)
