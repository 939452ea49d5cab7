"""A small local HTTP server speaking Ollama's `/api/embed` and `/api/show`.

Ollama itself cannot be installed on the test machines, so this protocol stub stands in for
it, with faults to inject: slow answers, 5xx/429, NaN vectors, wrong dimension or count,
over-long input, unknown model.
"""

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIM = 8
MODEL = "bge-m3"
DIGEST = "sha256:0123456789ab"


def vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255 - 0.5 for b in digest[:DIM]]


class FakeOllama:
    """Start with `with FakeOllama() as server:`; `server.faults` is consumed one per embed request."""

    def __init__(self):
        self.faults: list[str] = []
        self.requests: list[dict] = []
        self.calls = 0  # every request, /api/show included
        self.poison = "POISON"  # a text holding this always gets a NaN vector
        self.slow_seconds = 1.0
        self.max_chars = 200  # inputs longer than this are "over the context length"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls += 1
                if body.get("model") != MODEL:
                    return self.reply(404, {"error": f"model '{body.get('model')}' not found"})
                if self.path == "/api/show":
                    return self.reply(200, {"digest": DIGEST, "model_info": {"bert.embedding_length": DIM}})
                if self.path != "/api/embed":
                    return self.reply(404, {"error": "no such endpoint"})
                outer.requests.append(body)
                fault = outer.faults.pop(0) if outer.faults else ""
                texts = body["input"]
                if fault == "slow":
                    time.sleep(outer.slow_seconds)
                if fault in ("500", "503"):
                    return self.reply(int(fault), {"error": "model runner crashed"})
                if fault == "429":
                    return self.reply(429, {"error": "server busy"})
                if fault == "429-retry-after":
                    return self.reply(429, {"error": "server busy"}, {"Retry-After": "1"})
                if fault == "400":
                    return self.reply(400, {"error": "invalid request"})
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

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "FakeOllama":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
