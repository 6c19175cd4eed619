"""A hard deadline for the sync client, where httpx has only per-operation timeouts.

httpx bounds each socket operation (connect, one read, one write), so a receiver that sends a
byte just within every read timeout keeps a request alive indefinitely. The async path cancels
the exchange; a blocking call cannot be cancelled, so the bound is applied where the waiting
happens: every socket operation of the sync client's connections waits at most until the
deadline set by :func:`bounded` for the current thread, and fails with a timeout after it.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Generator, Iterable
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

_deadline: ContextVar[float | None] = ContextVar("agent_wait_webhook_deadline", default=None)


@contextmanager
def bounded(deadline: float) -> Generator[None]:
    """Make socket operations of this thread's requests stop at ``deadline`` (monotonic)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _clamp(timeout: float | None, error: type[httpcore.TimeoutException]) -> float | None:
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise error("the request ran past its deadline")
    return remaining if timeout is None else min(timeout, remaining)


class _BoundedStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _clamp(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        tls = self._stream.start_tls(
            ssl_context, server_hostname, _clamp(timeout, httpcore.ConnectTimeout)
        )
        return _BoundedStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _BoundedBackend(httpcore.NetworkBackend):
    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._backend.connect_tcp(
            host, port, _clamp(timeout, httpcore.ConnectTimeout), local_address, socket_options
        )
        return _BoundedStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._backend.connect_unix_socket(
            path, _clamp(timeout, httpcore.ConnectTimeout), socket_options
        )
        return _BoundedStream(stream)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def deadline_client(**options: Any) -> httpx.Client:
    """An ``httpx.Client`` (same options) whose connections honour :func:`bounded`.

    httpx does not pass a network backend through to its httpcore connection pools, so it is
    swapped in on each pool (the direct one and any proxy mount) before the first connection.

    Raises:
        RuntimeError: This httpx version keeps its pools differently (the deadline could not be
            installed, and requests would not be bounded).
    """
    client = httpx.Client(**options)
    mounts = client._mounts.values()  # pyright: ignore[reportPrivateUsage]
    for transport in (client._transport, *mounts):  # pyright: ignore[reportPrivateUsage]
        if transport is None:  # a no-proxy mount: requests go through the direct transport
            continue
        pool: object = getattr(transport, "_pool", None)
        backend: object = getattr(pool, "_network_backend", None)
        if not isinstance(backend, httpcore.NetworkBackend):
            client.close()
            raise RuntimeError(
                f"agent-wait-webhook cannot bound sync requests with httpx {httpx.__version__}: "
                f"{type(transport).__name__} has no httpcore network backend"
            )
        setattr(pool, "_network_backend", _BoundedBackend(backend))  # noqa: B010 - a private slot
    return client
