"""A strategy's retrieval lane as one call: every question ranked by every configured retriever,
with what evaluation reads of each row (the units holding an evidence, the units its asker may
read), the share of questions BM25 finds nothing for, and the rows leaked to an asker."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_pipeline.lib.core import AnyPath, leaked_rows, readable_units
from rag_pipeline.lib.evaluation.metrics import relevant_column
from rag_pipeline.lib.questions import asker_groups, questions_from_frame
from rag_pipeline.lib.retrieval import (
    Analyzer,
    ChunkIndex,
    HttpReranker,
    Queries,
    RetrievalSettings,
    TokenStore,
    lexical_miss_share,
    retrieve_incremental,
)


@dataclass(frozen=True)
class Ranking:
    """How a lane is ranked: the retriever configurations, their settings, the reranker `+rerank`
    asks (None: none configured) and BM25's analyzer."""

    retrievers: list[str]
    settings: RetrievalSettings
    reranker: HttpReranker | None
    analyzer: Analyzer


@dataclass
class Ranked:
    frame: pd.DataFrame  # the lane: one row per question, retriever and rank
    lexical_miss: float  # the share of questions BM25 finds no chunk sharing a token for
    leaks: pd.DataFrame  # the rows whose unit the question's asker may not read


def ranked_lane(
    strategy: str,
    chunks: pd.DataFrame,
    vectors: tuple[object, object],
    questions: pd.DataFrame,
    query_vectors: np.ndarray,
    ranking: Ranking,
    data_dir: AnyPath,
    embedding_version: str,
) -> Ranked:
    """`questions` (as `usable` leaves them) ranked over the `chunks` of `strategy` and their
    (passage, contextual) `vectors` by every retriever of `ranking`; the tokens and candidates of
    the last run kept under `data_dir` (`tokens/`, `candidates/<strategy>/`) are reused."""
    analyzer = ranking.analyzer
    askers = {qid: asker_groups(row) for qid, row in zip(questions["question_id"], questions.itertuples())}
    index = ChunkIndex(
        chunks=chunks,
        vectors=vectors[0],
        ctx_vectors=vectors[1],
        analyzer=analyzer,
        token_store=TokenStore(data_dir / "tokens", analyzer),
    )
    ids, texts = questions["question_id"].tolist(), questions["q"].tolist()
    frame = retrieve_incremental(
        index,
        ranking.retrievers,
        Queries(ids, query_vectors, texts, [askers[q] for q in ids]),
        ranking.settings,
        ranking.reranker,
        cache_dir=data_dir / "candidates" / strategy,
        version=embedding_version,
    )
    _, spans = questions_from_frame(questions)
    frame["n_relevant"] = relevant_column(frame, spans, chunks)
    frame["n_readable"] = readable_units(frame, chunks, askers)
    frame["strategy"] = strategy
    frame["embedding_version"] = embedding_version
    frame["analyzer"] = analyzer.version
    frame["n_chunks"] = len(chunks)
    frame["questions_sha256"] = questions["questions_sha256"].iloc[0] if len(questions) else ""
    return Ranked(frame, lexical_miss_share(index, texts), leaked_rows(frame, askers))
