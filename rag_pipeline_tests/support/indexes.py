"""A three-chunk index with one-hot vectors: the smallest index every retriever runs on."""

import numpy as np
import pandas as pd

from rag_pipeline.lib.retrieval import ChunkIndex, make_analyzer


def small_index() -> ChunkIndex:
    chunks = pd.DataFrame(
        {
            "chunk_id": ["a", "b", "c"],
            "note": ["n1", "n1", "n2"],
            "start": [0, 50, 0],
            "end": [50, 100, 40],
            "n_chars": [50, 50, 40],
            "heading_path": ["T1 > S1", "T1 > S1", "T2"],
            "parent_id": ["p1", "p1", "p2"],
            "parent_start": [0, 0, 0],
            "parent_end": [100, 100, 40],
            "text": ["デッドロックの検出", "SQLSTATE 40P01 が返る", "列指向の圧縮"],
        }
    )
    vectors = np.eye(3, dtype=np.float32)
    return ChunkIndex(chunks, vectors, make_analyzer("char"), ctx_vectors=vectors)
