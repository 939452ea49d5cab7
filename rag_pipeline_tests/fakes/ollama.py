"""A small local HTTP server speaking Ollama's `/api/embed` and `/api/show`.

Ollama itself cannot be installed on the test machines, so this protocol stub stands in for
it, with faults to inject: slow answers, 5xx/429, NaN vectors, wrong dimension or count,
over-long input, unknown model.
"""

import hashlib

from rag_pipeline_tests.fakes.json_server import LocalServer, ModelHandler

DIM = 8
MODEL = "bge-m3"
DIGEST = "sha256:0123456789ab"


def vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255 - 0.5 for b in digest[:DIM]]


class FakeOllama(LocalServer):
    """Start with `with FakeOllama() as server:`; `server.faults` is consumed one per embed request."""

    def __init__(self):
        self.faults: list[str] = []
        self.requests: list[dict] = []
        self.calls = 0  # every request, /api/show included
        self.poison = "POISON"  # a text holding this always gets a NaN vector
        self.slow_seconds = 1.0
        self.max_chars = 200  # inputs longer than this are "over the context length"
        self.digest = DIGEST  # the served model's, as /api/show reports it
        outer = self

        class Handler(ModelHandler):
            def do_POST(self):
                body = self.read_json()
                outer.calls += 1
                if self.unknown_model(body, MODEL):
                    return None
                if self.path == "/api/show":
                    return self.reply(
                        200, {"digest": outer.digest, "model_info": {"bert.embedding_length": DIM}}
                    )
                if self.path != "/api/embed":
                    return self.reply(404, {"error": "no such endpoint"})
                outer.requests.append(body)
                fault = outer.faults.pop(0) if outer.faults else ""
                texts = body["input"]
                if fault == "429-retry-after":
                    return self.reply(429, {"error": "server busy"}, {"Retry-After": "1"})
                if self.fault(fault, outer.slow_seconds):
                    return None
                if any(len(t) > outer.max_chars for t in texts):
                    return self.reply(400, {"error": "the input length exceeds the context length"})
                vectors = [vector(t) for t in texts]
                for i, t in enumerate(texts):
                    if outer.poison in t or (fault == "nan" and i == 0):
                        vectors[i][0] = float("nan")
                if fault == "wrong_dim":
                    vectors = [[*v, 0.1] for v in vectors]
                if fault == "wrong_count":
                    vectors = vectors[:-1]
                # json cannot carry NaN: Ollama's answer holds the bare token, as Python writes it
                return self.reply(
                    200, {"model": MODEL, "embeddings": vectors, "prompt_eval_count": len(texts)}
                )

        self.serve(Handler)


def ollama_env(server: FakeOllama, notes_repo, questions_path, tmp_path) -> dict[str, str]:
    """The RAG_* settings of a run on the small repository embedded through `server`."""
    server.max_chars = 5000
    return {
        "RAG_NOTES_REPO": notes_repo.working_tree_dir,
        "RAG_QUESTIONS": str(questions_path),
        "RAG_DATA_DIR": str(tmp_path / "out"),
        "RAG_EMBEDDER": "ollama",
        "RAG_EMBED_URL": server.url,
        "RAG_EMBED_MODEL": "bge-m3",
    }
