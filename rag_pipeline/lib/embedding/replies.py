"""An embedding server's reply read with care: a reply of the wrong shape is an error naming the
server and the API it should speak, never an AttributeError or numpy's "inhomogeneous shape"."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from rag_pipeline.lib.embedding.embedders import EmbeddingError

OLLAMA_API = "an Ollama server (its /api/embed)"
OPENAI_API = "an OpenAI-compatible embeddings server (its /v1/embeddings)"


def reply_list(reply: Any, key: str, where: str, api: str) -> list:
    """The list a server's reply holds under `key`; a reply of another shape is an error naming
    the server and the API it should speak."""
    if not isinstance(reply, dict):
        got = {list: "a JSON list", str: "a JSON string"}.get(type(reply), f"JSON {json.dumps(reply)[:20]}")
        raise EmbeddingError(
            f"{where}: the reply is {got}, not an object with the `{key}` list; does RAG_EMBED_URL "
            f"point at {api}?"
        )
    if not isinstance(reply.get(key), list):
        raise EmbeddingError(f"{where}: the reply has no `{key}` list; does RAG_EMBED_URL point at {api}?")
    return reply[key]


def vector_matrix(rows: list, where: str) -> np.ndarray:
    """A reply's vectors as one float32 matrix; vectors that are not lists of numbers, or differ in
    length, are an error naming the server (numpy would say only "inhomogeneous shape")."""
    if not rows:
        return np.zeros((0, 0), np.float32)
    lengths = sorted({len(row) if isinstance(row, list) else -1 for row in rows})
    if lengths[0] < 0:
        raise EmbeddingError(f"{where}: a vector in the reply is not a list of numbers; check the server")
    if len(lengths) > 1:
        raise EmbeddingError(
            f"{where}: the reply's vectors differ in length ({', '.join(map(str, lengths))} numbers); "
            "check the server and its model"
        )
    try:
        return np.array(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbeddingError(f"{where}: a vector in the reply holds something other than numbers") from None
