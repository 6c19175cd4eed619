"""Strands' async event stream, iterated from sync code.

Strands streams only through ``stream_async``; its sync ``agent(...)`` runs ``invoke_async``
on a private event loop in a worker thread (``run_async``, see ``_compat``). :func:`iterate` runs
``stream_async`` on that same bridge and hands its events to the sync caller one at a time: the
stream advances only when the caller asks for the next event (as ``async for`` would), the
whole iteration is one task (so context variables set inside Strands, tracing spans among
them, hold from one event to the next), and a caller that stops early closes the stream, which
runs Strands' own clean-up, before its own iteration returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, cast

from agent_wait.strands._compat import run_async

_ITEM, _END, _ERROR = "item", "end", "error"


async def aclose(events: AsyncIterator[Any]) -> None:
    """Close ``events``: Strands types its streams as async iterators, they are generators."""
    close = getattr(events, "aclose", None)
    if callable(close):
        await cast("Callable[[], Awaitable[object]]", close)()


class _Pump:
    """The worker side: one ``async for`` over the stream, an item per request."""

    def __init__(self, stream: Callable[[], AsyncIterator[Any]]) -> None:
        self.stream = stream
        self.out: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.wanted: asyncio.Event | None = None
        self.task: asyncio.Task[None] | None = None
        self.stopping = False

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.wanted = asyncio.Event()
        self.task = asyncio.current_task()
        self.ready.set()
        events = aiter(self.stream())
        try:
            while True:
                await self.wanted.wait()
                self.wanted.clear()
                if self.stopping:
                    return
                try:
                    item = await anext(events)
                except StopAsyncIteration:
                    self.out.put((_END, None))
                    return
                self.out.put((_ITEM, item))
        finally:
            await aclose(events)

    def work(self) -> None:
        try:
            run_async(self.run)
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread, raised there
            self.out.put((_ERROR, error))
        finally:
            self.ready.set()  # the loop may have failed before it started

    def ask(self) -> None:
        """Wake the pump for one more item (or to stop), from the caller's thread."""
        if self.wanted is not None:
            self._call(self.wanted.set)

    def cancel(self) -> None:
        """Cancel the run mid-item, from the caller's thread."""
        if self.task is not None:
            self._call(self.task.cancel)

    def _call(self, function: Callable[[], object]) -> None:
        if self.loop is None:
            return
        # A closed loop means the pump has finished and said so: nothing left to wake.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(function)


def iterate(stream: Callable[[], AsyncIterator[Any]]) -> Generator[Any]:
    """The items of ``stream()``, an async iterator, as a sync generator.

    Exceptions of the stream are raised here, as they were raised there. Closing the generator
    (a ``break``, an exception in the caller) closes the stream and waits for it; one closed
    while an item is being produced (only an asynchronous exception, such as
    ``KeyboardInterrupt``, does that) cancels the run.
    """
    pump = _Pump(stream)
    # The caller's context variables reach the run, as with Strands' own sync call. A daemon:
    # an iteration abandoned without being closed (its generator kept alive until exit) leaves
    # the worker waiting for a next request, which must not keep the interpreter from exiting.
    worker = threading.Thread(
        target=contextvars.copy_context().run,
        args=(pump.work,),
        name="agent-wait-strands-stream",
        daemon=True,
    )
    worker.start()
    pump.ready.wait()
    producing = False
    try:
        while True:
            pump.ask()
            producing = True
            kind, value = pump.out.get()
            producing = False
            if kind == _END:
                return
            if kind == _ERROR:
                raise value
            yield value
    finally:
        if worker.is_alive():
            pump.stopping = True
            if producing:
                pump.cancel()
            pump.ask()
            worker.join()
