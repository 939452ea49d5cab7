"""A local HTTP server that never finishes an answer: it `hang`s (reads the request, sends nothing),
trickles the status line (`trickle_head`) or sends its headers and then the body (`trickle_body`)
one byte every `every` seconds, for at most `limit` seconds, then closes the connection.

Every read of a client waiting on it returns within `every` seconds, so only a deadline on the
whole request stops the client: a per-read timeout longer than `every` never fires."""

import threading
import time
from http.server import BaseHTTPRequestHandler

from rag_pipeline_tests.fakes.json_server import LocalServer

BODY = b'{"embeddings": [[0.1, 0.2]], "message": {"content": "late"}, "choices": []}'


class SlowServer(LocalServer):
    def __init__(self, mode: str, every: float = 0.3, limit: float = 20.0):
        self.mode, self.every, self.limit = mode, every, limit
        self.requests: list[str] = []  # the request paths, as sent (absolute through a proxy)
        self.stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append(self.path)
                head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                head += f"Content-Length: {len(BODY)}\r\n\r\n".encode()
                if outer.mode == "hang":
                    outer.stop.wait(outer.limit)
                elif outer.mode == "trickle_head":
                    outer.trickle(self.wfile, head + BODY)
                else:
                    self.wfile.write(head)
                    self.wfile.flush()
                    outer.trickle(self.wfile, BODY)
                self.close_connection = True

        self.serve(Handler)

    def trickle(self, out, data: bytes) -> None:
        ends = time.monotonic() + self.limit
        for i in range(len(data)):
            if self.stop.wait(self.every) or time.monotonic() > ends:
                return
            try:
                out.write(data[i : i + 1])
                out.flush()
            except OSError:  # the client gave up
                return

    def __exit__(self, *exc) -> None:
        self.stop.set()
        super().__exit__(*exc)
