"""The plumbing the protocol stand-ins share: a JSON request handler and a server run in a thread on
127.0.0.1 (`with Server(...) as server:`, its base URL in `server.url`)."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # the headers and the body are two writes: with Nagle's algorithm the body waits for the client's
    # delayed ACK (40 ms a request), which a run of thousands of judge requests cannot afford
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def read_json(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def reply(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # a client that read enough (a reply's limit)
            self.close_connection = True


FAULTS = {
    "500": "model runner crashed",
    "503": "model runner crashed",
    "429": "server busy",
    "400": "invalid request",
}


class ModelHandler(JsonHandler):
    """A model server's handler: one model, injected faults."""

    def unknown_model(self, body: dict, model: str) -> bool:
        """Reply 404 unless `body` names `model`; True when it replied."""
        if body.get("model") == model:
            return False
        self.reply(404, {"error": f"model '{body.get('model')}' not found"})
        return True

    def fault(self, fault: str, slow_seconds: float) -> bool:
        """Act out an injected fault: `slow` waits first; a status (500, 503, 429, 400) is replied,
        and then True."""
        if fault == "slow":
            time.sleep(slow_seconds)
        if fault not in FAULTS:
            return False
        self.reply(int(fault), {"error": FAULTS[fault]})
        return True


class LocalServer:
    def serve(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
