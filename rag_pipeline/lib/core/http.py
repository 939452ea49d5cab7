"""A pooled JSON-over-HTTP client with bounded retries, shared by the embedding and reranking backends.

Timeouts, connection errors, 408, 429 and 5xx are retried (tenacity) with exponential backoff and
full jitter, or after the server's `Retry-After` on 429 and 503; any other 4xx fails at once with
the server's own message. A call's budget is timeout x attempts: a `Retry-After` longer than what
is left of it fails the call at once, naming the wait asked for, and every wait is logged with its
server, reason and length. `timeout` bounds each request as a whole, not each read (see
deadline.py), so a server that never answers, or answers a byte at a time, fails the call within
about (retries + 1) x timeout plus the backoff; while a request is outstanding a line is logged
every `heartbeat_s`. A reply that is not JSON is an error naming the URL, never a bare decode error;
one longer than `max_bytes` is not read past that (`TooLong`), so a server that floods cannot fill
memory or the caches.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import tenacity

from rag_pipeline.lib.core.deadline import DeadlineTransport, within
from rag_pipeline.lib.core.text import clipped

RETRY_STATUS = {408, 429, 500, 502, 503, 504}

log = logging.getLogger("rag_pipeline.http")


class ServerError(RuntimeError):
    """The server could not be reached or refused the request; `status` is its HTTP status, if any."""

    def __init__(
        self, message: str, status: int | None = None, retry_after: float | None = None, hint: str = ""
    ):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.hint = hint  # what to do, said once the retries are spent

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status in RETRY_STATUS


class TooLong(ServerError):
    """The reply is longer than the client reads: asking again would get the same."""

    @property
    def retryable(self) -> bool:
        return False


class WaitTooLong(ServerError):
    """The server asked to be retried later than the call's budget allows: waiting is pointless."""

    @property
    def retryable(self) -> bool:
        return False


@contextmanager
def heartbeat(what: str, every_s: float) -> Iterator[None]:
    """Log `what` every `every_s` seconds until the block ends: a hung call is never silent."""
    done = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not done.wait(every_s):
            log.info(f"{what}: still waiting, {time.monotonic() - started:.0f} s so far")

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` as seconds: delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds())
    except (TypeError, ValueError):
        return None


def bearer(api_key_env: str) -> dict[str, str]:
    """The `Authorization` header for the API key in the variable `api_key_env` (none when unset);
    the key is read at call time and never kept in config or metadata."""
    key = os.environ.get(api_key_env)
    return {"Authorization": f"Bearer {key}"} if key else {}


class JsonClient:
    def __init__(
        self,
        url: str,
        name: str,
        *,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        headers: dict[str, str] | None = None,
        connections: int = 1,
        heartbeat_s: float = 10.0,
        timeout_var: str = "the timeout",
        max_bytes: int | None = None,
        max_bytes_var: str = "the limit",
    ):
        """`timeout_var` names the variable that sets `timeout`, for the error a too-long wait gives;
        `max_bytes_var` the one that sets `max_bytes` (None: no limit), for a too-long reply's."""
        self.url = url.rstrip("/")
        self.max_bytes, self.max_bytes_var = max_bytes, max_bytes_var
        self.timeout_var = timeout_var
        self.name = name
        self.timeout = timeout
        self.max_retries = max_retries
        self.heartbeat_s = heartbeat_s
        self._jitter = tenacity.wait_random_exponential(multiplier=backoff, max=30)
        # the transport applies the environment's proxy itself, so httpx must not mount its own
        self.client = httpx.Client(
            timeout=timeout,
            headers=headers or {},
            transport=DeadlineTransport(self.url, connections),
            trust_env=False,
        )

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ServerError) and exc.retry_after is not None:
            return exc.retry_after
        return self._jitter(state)

    def _waiting(self, state: tenacity.RetryCallState) -> None:
        """One line per wait: the server, why, and for how long."""
        exc = state.outcome.exception() if state.outcome else None
        asked = isinstance(exc, ServerError) and exc.retry_after is not None
        why = "as the server asked (Retry-After)" if asked else "(backoff)"
        seconds = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            f"{exc}; waiting {seconds:.1f} s {why}, then attempt "
            f"{state.attempt_number + 1} of {self.max_retries + 1}"
        )

    def _budget_left(self, started: float) -> float:
        return self.timeout * (self.max_retries + 1) - (time.monotonic() - started)

    def _post_once(self, url: str, body: dict[str, Any], started: float) -> Any:
        try:
            with (
                heartbeat(f"{self.name} {url}", self.heartbeat_s),
                within(self.timeout),
                self.client.stream("POST", url, json=body) as streamed,
            ):
                response = self._read(streamed, url)
        except httpx.TimeoutException as exc:
            raise ServerError(
                f"{self.name} {url}: timed out after {self.timeout:g} s ({exc.__class__.__name__})",
                hint=f"is the server overloaded? raise {self.timeout_var} if it is just slow",
            ) from exc
        except httpx.TransportError as exc:
            raise ServerError(
                f"{self.name} {url}: cannot connect ({exc})", hint="is the server running at that URL?"
            ) from exc
        status = response.status_code
        if status < 400:
            try:
                return response.json()
            except ValueError:
                raise ServerError(
                    f"{self.name} {url}: HTTP {status} but the reply is not JSON "
                    f"({clipped(response.text, 80)!r}); is {self.url} the server's base URL?",
                    status,
                ) from None
        wait = retry_after_seconds(response.headers.get("retry-after")) if status in (429, 503) else None
        left = self._budget_left(started)
        if wait is not None and wait > left and self.max_retries:
            raise WaitTooLong(
                f"{self.name} {url}: HTTP {status}, asked to retry after {wait:.0f} s, more than the "
                f"{max(left, 0):.0f} s left of {self.timeout_var} x attempts ({self.timeout:g} s x "
                f"{self.max_retries + 1}); raise {self.timeout_var} or try later",
                status,
                wait,
            )
        raise ServerError(f"{self.name} {url}: HTTP {status}: {server_message(response)}", status, wait)

    def _read(self, streamed: httpx.Response, url: str) -> httpx.Response:
        """The response with its body read, up to `max_bytes`: a longer one is `TooLong`, and the
        rest is not read."""
        chunks, size = [], 0
        for chunk in streamed.iter_bytes():
            size += len(chunk)
            if self.max_bytes is not None and size > self.max_bytes:
                raise TooLong(
                    f"{self.name} {url}: the reply is longer than {self.max_bytes:,} bytes "
                    f"({self.max_bytes_var}); the rest was not read"
                )
            chunks.append(chunk)
        headers = [(k, v) for k, v in streamed.headers.multi_items() if k.lower() != "content-encoding"]
        return httpx.Response(  # the body as read: decoded already
            streamed.status_code, headers=headers, content=b"".join(chunks), request=streamed.request
        )

    def post(self, path: str, body: dict[str, Any]) -> Any:
        url = f"{self.url}{path}"
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=tenacity.retry_if_exception(lambda e: isinstance(e, ServerError) and e.retryable),
            before_sleep=self._waiting,
            reraise=True,
        )
        try:
            return retrying(self._post_once, url, body, time.monotonic())
        except ServerError as exc:
            if not exc.retryable:
                raise
            attempts = retrying.statistics.get("attempt_number", 1)
            hint = f"; {exc.hint}" if exc.hint else ""
            raise ServerError(f"{exc}, after {attempts} attempts{hint}", exc.status) from exc


def without_v1(url: str) -> str:
    """An OpenAI-compatible base URL as the paths here (`/v1/...`) expect it: one trailing `/v1`,
    as the OpenAI SDKs take the base URL, is dropped."""
    url = url.strip().rstrip("/")
    return url.removesuffix("/v1")


def server_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return clipped(response.text, 200)
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        error = error.get("message", error)
    return clipped(error, 300)
