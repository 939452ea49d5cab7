"""A pooled JSON-over-HTTP client with retries, shared by the embedding and reranking backends.

Timeouts, connection errors, 408, 429 and 5xx are retried with exponential backoff and full
jitter; any other 4xx is an error at once, carrying the server's own message.
"""

from __future__ import annotations

import random
import time
from typing import Any

import httpx

RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class ServerError(RuntimeError):
    """The server could not be reached or refused the request; `status` is its HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class JsonClient:
    def __init__(
        self,
        url: str,
        name: str,
        *,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        headers: dict[str, str] | None = None,
        connections: int = 1,
    ):
        self.url = url.rstrip("/")
        self.name = name
        self.max_retries = max_retries
        self.backoff = backoff
        self.client = httpx.Client(
            timeout=timeout,
            headers=headers or {},
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )

    def post(self, path: str, body: dict[str, Any]) -> Any:
        url = f"{self.url}{path}"
        for attempt in range(self.max_retries + 1):
            try:
                response = self.client.post(url, json=body)
            except httpx.TimeoutException as exc:
                problem, status = f"timed out ({exc.__class__.__name__})", None
            except httpx.TransportError as exc:
                problem, status = f"cannot connect ({exc}); is the server running?", None
            else:
                if response.status_code < 400:
                    return response.json()
                problem, status = (
                    f"HTTP {response.status_code}: {server_message(response)}",
                    response.status_code,
                )
                if status not in RETRY_STATUS:
                    raise ServerError(f"{self.name} {url}: {problem}", status)
            if attempt == self.max_retries:
                raise ServerError(f"{self.name} {url}: {problem}, after {attempt + 1} attempts", status)
            time.sleep(random.uniform(0, self.backoff * 2**attempt))
        raise AssertionError("unreachable")


def server_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:300]
