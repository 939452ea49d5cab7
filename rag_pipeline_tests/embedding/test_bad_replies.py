"""An embedding server whose reply has the wrong shape (a JSON list, an item without `embedding`,
vectors of different lengths) is one line naming the server (URL and model) and the API it should
speak. Against a real server on 127.0.0.1."""

import pytest

from rag_pipeline.lib.embedding import EmbeddingError, OllamaEmbedder, OpenAIEmbedder
from rag_pipeline_tests.fakes.json_server import JsonHandler, LocalServer

FAST = {"timeout": 5.0, "max_retries": 2, "backoff": 0.01}


class ReplyServer(LocalServer):
    """Answers every POST 200 with the one JSON `body`, whatever the path: a server that speaks
    neither embedding API as it should."""

    def __init__(self, body: object):
        class Handler(JsonHandler):
            def do_POST(self):
                self.read_json()
                self.reply(200, body)

        self.serve(Handler)


OLLAMA_API = "does RAG_EMBED_URL point at an Ollama server (its /api/embed)?"
OPENAI_API = "does RAG_EMBED_URL point at an OpenAI-compatible embeddings server (its /v1/embeddings)?"
KNOWN = {"identity": {"digest": "d", "dim": 2}}  # as if learned before: only the embed request is made


@pytest.mark.parametrize(
    ("make", "body", "message"),
    [
        (
            lambda url: OllamaEmbedder(url, "bge-m3", **FAST),
            [[0.1, 0.2]],
            f"the /api/show reply is not a JSON object; {OLLAMA_API}",
        ),
        (
            lambda url: OllamaEmbedder(url, "bge-m3", **FAST, **KNOWN),
            {"digest": "d", "model_info": {"m.embedding_length": 2}, "embeddings": [[0.1, 0.2], [0.3]]},
            "the reply's vectors differ in length (1, 2 numbers); check the server and its model",
        ),
        (
            lambda url: OllamaEmbedder(url, "bge-m3", **FAST, **KNOWN),
            {"digest": "d", "model_info": {"m.embedding_length": 2}, "vectors": [[0.1, 0.2]]},
            f"the reply has no `embeddings` list; {OLLAMA_API}",
        ),
        (
            lambda url: OpenAIEmbedder(url, "e5-small", **FAST),
            [{"embedding": [0.1, 0.2]}],
            f"the reply is a JSON list, not an object with the `data` list; {OPENAI_API}",
        ),
        (
            lambda url: OpenAIEmbedder(url, "e5-small", **FAST),
            {"data": [{"index": 0, "vector": [0.1, 0.2]}]},
            f"item 0 of the reply's `data` has no `embedding`; {OPENAI_API}",
        ),
        (
            lambda url: OpenAIEmbedder(url, "e5-small", **FAST),
            {"data": [{"index": 0, "embedding": [0.1, 0.2]}, {"index": 1, "embedding": [0.1]}]},
            "the reply's vectors differ in length (1, 2 numbers); check the server and its model",
        ),
    ],
)
def test_an_embedding_reply_of_the_wrong_shape_names_the_server_and_model(make, body, message):
    with ReplyServer(body) as server, pytest.raises(EmbeddingError) as error:
        embedder = make(server.url)
        embedder.embed(["one text", "another"], "passage")
    assert str(error.value) == f"{embedder.where()}: {message}"
    assert server.url in str(error.value) and embedder.model in str(error.value)
