"""The lifecycle of a long-lived sync/async client pair, injected or built on first use."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, suppress
from typing import Generic, Protocol, TypeVar


def _unchanged(error: BaseException) -> BaseException:
    return error


class SupportsClose(Protocol):
    """A client with a ``close()`` method."""

    def close(self) -> None:
        """Release the client's connections."""
        ...


S = TypeVar("S", bound=SupportsClose)
A = TypeVar("A")


class ClientPair(Generic[S, A]):
    """A sync client and an async client, injected or built on first use and then reused.

    Injected clients are used as given and never closed: their owner closes them. Clients built
    here are closed by :meth:`close` / :meth:`aclose`. An async client belongs to the event loop
    that opened it (its connection pool does), so a new running loop, such as a host calling
    ``asyncio.run`` per message, opens a new one.

    Args:
        build_sync: Builds the sync client (called at most once, under a lock).
        open_async: Returns the async context manager of a new async client; None runs the
            sync client in a worker thread on the async path. So does injecting only a sync
            client: it carries the caller's configuration, which a built one would not.
        sync_client: An injected sync client.
        async_client: An injected async client.
        classify: Maps an exception the SDK raised to the error to report, typically a
            :class:`~agent_wait.core.DeliveryFailed` saying whether a retry may succeed; other
            exceptions are returned unchanged.
    """

    def __init__(
        self,
        build_sync: Callable[[], S],
        open_async: Callable[[], AbstractAsyncContextManager[A]] | None,
        *,
        sync_client: S | None = None,
        async_client: A | None = None,
        classify: Callable[[BaseException], BaseException] | None = None,
    ) -> None:
        self.classify: Callable[[BaseException], BaseException] = classify or _unchanged
        self._build_sync = build_sync
        self._open_async = None if sync_client is not None and async_client is None else open_async
        self._sync = sync_client
        self._owns_sync = sync_client is None
        self._injected_async = async_client
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Task[A] | None = None
        self._stack: AsyncExitStack | None = None

    def sync(self) -> S:
        """The sync client (built on first use)."""
        with self._lock:
            if self._sync is None:
                self._sync = self._build_sync()
            return self._sync

    async def async_client(self) -> A | None:
        """The async client for the running loop, or None to run the sync client in a thread."""
        if self._injected_async is not None:
            return self._injected_async
        if self._open_async is None:
            return None
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # A client opened on another loop cannot be used or closed from this one; that loop
            # has finished (asyncio.run per message), so its client is abandoned, not shared.
            self._loop, self._opening, self._stack = loop, None, None
        opening = self._opening
        if opening is None or (opening.done() and (opening.cancelled() or opening.exception())):
            opening = self._opening = loop.create_task(self._open())
        return await asyncio.shield(opening)

    async def _open(self) -> A:
        assert self._open_async is not None
        stack = AsyncExitStack()
        client = await stack.enter_async_context(self._open_async())
        self._stack = stack
        return client

    def close(self) -> None:
        """Close the sync client if it was built here. Safe to call more than once."""
        with self._lock:
            client, self._sync = (self._sync, None) if self._owns_sync else (None, self._sync)
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close the async client opened on the running loop (if built here), then :meth:`close`."""
        opening, loop = self._opening, self._loop
        if opening is not None and loop is asyncio.get_running_loop():
            with suppress(Exception):  # a client that failed to open has nothing to close
                await asyncio.shield(opening)
            stack = self._stack
            self._opening, self._stack, self._loop = None, None, None
            if stack is not None:
                await stack.aclose()
        self.close()
