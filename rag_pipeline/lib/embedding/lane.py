"""A strategy's embeddings lane, planned: what each chunk embeds (its text, and with `+ctx` its
text with its context), the vector store's key of each, the lane's files to write, the passages
their buckets need, and what the lane's page shows once they are embedded."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.embedding.embedders import Embedder
from rag_pipeline.lib.embedding.lanefile import LaneWriter
from rag_pipeline.lib.embedding.vectorstore import Passages, passage_hashes


@dataclass
class LanePlan:
    ids: list[str]  # the chunks' ids, in the lane's order
    texts: Passages  # what is embedded: each chunk's text, then each with its context (`+ctx`)
    hashes: list[str]  # the vector store's key of each text
    lane: LaneWriter  # the lane's files, per bucket of notes
    needed: list[int]  # the texts the buckets to write need (only those of changed notes)

    def missing(self) -> tuple[list[str], list[str]]:
        """The texts needed, and for each what an error names (`chunk 1a2b (with context)`)."""
        n = len(self.ids)
        labels = [f"chunk {self.ids[i % n]}" + (" (with context)" if i >= n else "") for i in self.needed]
        return [self.texts[i] for i in self.needed], labels

    def new_chars(self, contains: Callable[[list[str]], Sequence[bool]]) -> int:
        """The characters of the texts needed that the store lacks (`contains(keys)`), each once: with
        the time their embedding takes, the rate `make run`'s plan estimates the next embedding with."""
        distinct = {self.hashes[i]: i for i in self.needed}
        stored = contains(list(distinct))
        return sum(len(self.texts[i]) for i, found in zip(distinct.values(), stored) if not found)

    def index(self, embedding_version: str) -> pd.DataFrame:
        """What the lane holds: each text's chunk and key, under `embedding_version`."""
        n = len(self.ids)
        ids = self.ids * (len(self.texts) // n if n else 1)
        return pd.DataFrame({"chunk_id": ids, "text_hash": self.hashes}).assign(version=embedding_version)


def plan_lane(model: Embedder, chunks: pd.DataFrame, contextual: bool, directory: AnyPath) -> LanePlan:
    """The lane of `chunks` embedded by `model` into `directory`; `contextual`: the `+ctx`
    retrievers need each chunk with its context too."""
    ids, n = chunks["chunk_id"].tolist(), len(chunks)
    texts = Passages(chunks["text"].tolist(), chunks["heading_path"].tolist(), contextual)
    hashes = passage_hashes(model, chunks, texts)
    lane = LaneWriter(
        directory,
        ids,
        chunks["note"].tolist(),
        hashes[:n],
        hashes[n:] if contextual else None,
        model.embedding_version,
        model.dim,
    )
    # only the buckets of changed notes are written, and only the vectors their files lack are
    # looked up (or embedded); retrieval and the index read only the row groups of new chunks
    return LanePlan(ids, texts, hashes, lane, lane.needed())
