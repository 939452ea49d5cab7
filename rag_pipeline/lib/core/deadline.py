"""A total deadline per HTTP request, enforced on every socket operation.

httpx's timeouts bound each read, connect or write on its own, so a server that sends one byte
every 2 s never trips a 3 s timeout. Here each socket operation of a request gets at most what is
left of the request's deadline (`within(seconds)`, per thread), and one begun after it fails at
once: headers and body alike, through a proxy or not, with no thread left behind.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

_local = threading.local()


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Socket operations of this thread's requests in the block end `seconds` from now at the latest."""
    previous = getattr(_local, "deadline", None)
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = previous


def _budget(timeout: float | None, expired: type[Exception]) -> float | None:
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _budget(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _budget(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None):
        budget = _budget(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, budget))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, **options: Any):
        budget = _budget(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, budget, **options))

    def connect_unix_socket(self, path: str, timeout: float | None = None, **options: Any):
        budget = _budget(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, budget, **options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


_CORE_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.ProxyError,
    httpcore.UnsupportedProtocol,
)


@contextmanager
def _httpx_errors() -> Iterator[None]:
    """httpcore's exceptions as httpx's of the same name, as httpx's own transport raises them."""
    try:
        yield
    except _CORE_ERRORS as exc:
        raise getattr(httpx, type(exc).__name__, httpx.TransportError)(str(exc)) from exc


class _Body(httpx.SyncByteStream):
    def __init__(self, inner: Iterable[bytes]):
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._inner

    def close(self) -> None:
        if hasattr(self._inner, "close"):
            self._inner.close()


def env_proxy(url: str) -> httpx.URL | None:
    """The proxy the standard variables (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY) give `url`."""
    target = httpx.URL(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(target.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass_environment(target.host, proxies):
        return None
    found = httpx.URL(proxy if "://" in proxy else f"http://{proxy}")
    if found.scheme not in ("http", "https"):
        raise ValueError(
            f"{url}: proxy {found.scheme}://{found.host} from the environment is not an HTTP proxy; "
            f"add {target.host} to NO_PROXY or use an HTTP(S) proxy"
        )
    return found


class DeadlineTransport(httpx.BaseTransport):
    """httpx's transport over an httpcore pool whose sockets keep the deadline set by `within`;
    an HTTP(S) proxy from the environment is used for `url` as httpx would use it."""

    def __init__(self, url: str, connections: int):
        pool: dict[str, Any] = {
            "ssl_context": httpx.create_ssl_context(trust_env=True),
            "max_connections": connections,
            "max_keepalive_connections": connections,
            "keepalive_expiry": 5.0,
            "network_backend": _Backend(),
        }
        proxy = env_proxy(url)
        if proxy is None:
            self._pool: httpcore.ConnectionPool = httpcore.ConnectionPool(**pool)
        else:
            auth = (proxy.username, proxy.password) if proxy.username else None
            self._pool = httpcore.HTTPProxy(
                proxy_url=str(proxy.copy_with(username=None, password=None)), proxy_auth=auth, **pool
            )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = self._pool.handle_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()
