"""A small local HTTP server speaking the OpenAI embeddings protocol (`/v1/embeddings`), for what
no test machine can run fast: a server that takes `delay` seconds per request (of `least` texts or
more), one that is `down`
(503 to every request), a count of the requests in flight at once, and each request's span in
time with its texts (`most_at_once` counts those of some texts only). Its vectors are a hash of
each text, so a build through it is deterministic. `python -m rag_pipeline_tests.fakes.openai_embed
PORT [DELAY]` serves it on 127.0.0.1 until killed (for a test that runs the pipeline in another
process)."""

import hashlib
import sys
import threading
import time

from rag_pipeline_tests.fakes.json_server import JsonHandler, LocalServer

DIM = 16
MODEL = "fake-embed"


def vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255 - 0.5 for b in digest[:DIM]]


class FakeOpenAIEmbeddings(LocalServer):
    """`with FakeOpenAIEmbeddings(delay=1.0) as server:`; `server.down = True` makes it refuse."""

    def __init__(self, delay: float = 0.0, port: int = 0, least: int = 1):
        self.delay, self.least, self.down = delay, least, False
        self.texts: list[str] = []  # every text embedded, in order
        self.in_flight = self.most_in_flight = 0
        self.spans: list[tuple[float, float, list[str]]] = []  # (start, end, texts) of each request answered
        lock = threading.Lock()
        outer = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = self.read_json()
                if outer.down:
                    return self.reply(503, {"error": "the model is not loaded"})
                with lock:
                    outer.in_flight += 1
                    outer.most_in_flight = max(outer.most_in_flight, outer.in_flight)
                started = time.monotonic()
                try:
                    texts = body["input"]
                    time.sleep(outer.delay if len(texts) >= outer.least else 0.0)
                    outer.texts += texts
                    outer.spans.append((started, time.monotonic(), texts))
                    data = [
                        {"object": "embedding", "index": i, "embedding": vector(t)}
                        for i, t in enumerate(texts)
                    ]
                    return self.reply(200, {"object": "list", "model": MODEL, "data": data})
                finally:
                    with lock:
                        outer.in_flight -= 1

        self.serve(Handler, port)


def most_at_once(spans: list[tuple[float, float, list[str]]], texts: set[str]) -> int:
    """The most requests in flight at once among those whose texts are all in `texts`."""
    edges = sorted(
        (t, step) for start, end, sent in spans if set(sent) <= texts for t, step in ((start, 1), (end, -1))
    )
    most = now = 0
    for _, step in edges:  # at equal times an end (-1) sorts before a start
        now += step
        most = max(most, now)
    return most


def openai_env(server: FakeOpenAIEmbeddings) -> dict[str, str]:
    """The RAG_* settings that embed through `server`."""
    return {"RAG_EMBEDDER": "openai", "RAG_EMBED_URL": server.url, "RAG_EMBED_MODEL": MODEL}


if __name__ == "__main__":
    with FakeOpenAIEmbeddings(float(sys.argv[2]) if len(sys.argv) > 2 else 0.0, int(sys.argv[1])):
        threading.Event().wait()
