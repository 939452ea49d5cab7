"""A protocol stand-in for Text Embeddings Inference's `/rerank` and the Cohere-style `/v1/rerank`
(neither server can be installed here): it scores by characters of the query found in the text."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def overlap(query: str, text: str) -> float:
    """The stub's relevance: characters of the query found in the text."""
    return float(sum(c in text for c in set(query)))


class FakeReranker:
    def __init__(self, drop_one: bool = False):
        self.calls: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls.append(body)
                texts = body.get("texts") or body.get("documents")
                scored = [{"index": i, "score": overlap(body["query"], t)} for i, t in enumerate(texts)]
                scored = sorted(scored, key=lambda s: -s["score"])[: len(scored) - drop_one]
                if self.path == "/v1/rerank":
                    answer = {
                        "results": [{"index": s["index"], "relevance_score": s["score"]} for s in scored]
                    }
                else:
                    answer = scored
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
