"""Everything external to the assets, as Dagster resources that build themselves from the settings:
the data directory, the notes repository, the questions file, the embedder, the retrieval and
serving settings, the served tables' store, the answerer and the judge. The wiring is in
`rag_pipeline/definitions.py`."""

from rag_pipeline.defs.resources.data import DataStore, NotesRepository, QuestionsFile
from rag_pipeline.defs.resources.models import AnswerResource, EmbedderResource, JudgeResource
from rag_pipeline.defs.resources.search import (
    ReleaseResource,
    RetrievalResource,
    ServedStore,
    ServingResource,
)

__all__ = [
    "AnswerResource",
    "DataStore",
    "EmbedderResource",
    "JudgeResource",
    "NotesRepository",
    "QuestionsFile",
    "ReleaseResource",
    "RetrievalResource",
    "ServedStore",
    "ServingResource",
]
