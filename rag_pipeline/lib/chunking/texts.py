"""The texts a chunk is indexed as (plain, and with its context in front) and their hashes."""

from __future__ import annotations

import pandas as pd

from rag_pipeline.lib.core import text_hash


def contextual_text(heading_path: str, text: str) -> str:
    """A chunk's text with its note title and heading path in front (what `+ctx` retrievers index)."""
    return f"{heading_path}\n{text}"


def with_text_hashes(chunks: pd.DataFrame) -> pd.DataFrame:
    """`chunks` with `text_hash` and `ctx_text_hash` (of the plain and the contextual text), for
    rows written before chunks carried them."""
    texts = chunks["text"].tolist()
    return chunks.assign(
        text_hash=[text_hash(t) for t in texts],
        ctx_text_hash=[
            text_hash(contextual_text(h, t)) for h, t in zip(chunks["heading_path"].tolist(), texts)
        ],
    )
