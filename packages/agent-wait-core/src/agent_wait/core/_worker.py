"""The host's worker loop: receive from an entry point, handle, acknowledge by the rules.

Framework-agnostic: it takes the function that handles one message (a framework's
``handle_message`` with the runnable bound), so each framework's ``serve`` is a few lines.

The rules:

- the handler returned (whatever the outcome: started, resumed, duplicate...): acknowledge;
- the message is malformed (``pydantic.ValidationError``): it can never succeed, dead-letter it;
- the handler raised anything else (``AnnounceFailed`` included): fail it, so it is handed out
  again after the entry point's retry delay, and dead-lettered after ``max_attempts``;
- the process dies: nothing is settled, the lease runs out and the message is handed out again.

Messages of one thread are never handled at once (the entry point hands out one per thread);
different threads run in parallel, up to ``concurrency``. SIGTERM and SIGINT stop receiving;
the messages in hand are finished and settled before the loop returns.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agent_wait.core._entry import EntryPoint, Received
from agent_wait.core._publish import Announce

logger = logging.getLogger("agent_wait.core.serve")

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass
class ServeReport:
    """What a worker did before it stopped.

    Attributes:
        acknowledged: Messages handled and acknowledged.
        retried: Failures handed back for another attempt.
        dead_lettered: Messages moved to the dead letters.
        lost_leases: Messages whose lease ran out before they were settled (another worker
            got them again).
    """

    acknowledged: int = 0
    retried: int = 0
    dead_lettered: int = 0
    lost_leases: int = 0


def _check_concurrency(concurrency: int) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"concurrency: expected a whole number >= 1, got {concurrency!r}")


def _outcome(result: object) -> str:
    outcome = getattr(result, "outcome", None)
    return str(outcome) if outcome is not None else "handled"


class _Settler:
    """Settles one handled message and counts what happened (shared by both loops)."""

    def __init__(self, entry: EntryPoint) -> None:
        self.entry = entry
        self.report = ServeReport()
        self._lock = threading.Lock()

    def done(self, received: Received, result: object) -> None:
        logger.info(
            "message %s of thread %s (attempt %d): %s",
            received.id,
            received.thread_id,
            received.attempt,
            _outcome(result),
        )
        acknowledged = self.entry.ack(received)
        with self._lock:
            if acknowledged:
                self.report.acknowledged += 1
            else:
                self.report.lost_leases += 1

    def failed(self, received: Received, error: Exception) -> None:
        poison = isinstance(error, ValidationError)
        # The type only at WARNING: an error's text may quote the question or the answer.
        logger.warning(
            "message %s of thread %s (attempt %d) failed: %s%s",
            received.id,
            received.thread_id,
            received.attempt,
            type(error).__name__,
            " (malformed, not retried)" if poison else "",
        )
        logger.debug("message %s failed with", received.id, exc_info=error)
        dead = self.entry.fail(received, f"{type(error).__name__}: {error}", retry=not poison)
        with self._lock:
            if dead:
                self.report.dead_lettered += 1
            else:
                self.report.retried += 1


@contextmanager
def _stop_on_signals(stop: Callable[[], None]) -> Generator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can take signals; the caller stops it with `stop`
        return

    def stopping(signum: int, frame: object) -> None:
        logger.info(
            "%s: finishing the messages in hand, then stopping", signal.Signals(signum).name
        )
        stop()

    previous = {sig: signal.signal(sig, stopping) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve_entry(
    handle: Callable[[dict[str, Any]], object],
    entry: EntryPoint | None = None,
    *,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: threading.Event | None = None,
) -> ServeReport:
    """Handle messages from ``entry`` with ``handle`` until stopped (SIGTERM, SIGINT, ``stop``).

    Args:
        handle: Handles one message (the received JSON object); raising means "not handled".
        entry: Where messages come from (default: the configured entry point, closed on return).
        concurrency: How many threads are handled at once.
        wait: Seconds each receive waits for a message (the longest a stop waits for it).
        stop: Set it to stop the loop (from another thread, or when not on the main thread).

    Returns:
        What was acknowledged, retried and dead-lettered.
    """
    _check_concurrency(concurrency)
    own = entry is None
    if entry is None:
        from agent_wait.core._entries import default_entry

        entry = default_entry()
    stopped = stop or threading.Event()
    settler = _Settler(entry)

    def run(received: Received) -> None:
        try:
            result = handle(received.message)
        except Exception as error:  # noqa: BLE001 - every failure is settled by the rules
            settler.failed(received, error)
        else:
            settler.done(received, result)

    inflight: dict[Future[None], Received] = {}
    beat = time.monotonic()
    logger.info("serving %r with concurrency %d", entry, concurrency)
    try:
        with (
            ThreadPoolExecutor(concurrency, "agent-wait-serve") as pool,
            _stop_on_signals(stopped.set),
        ):
            while not stopped.is_set():
                free = concurrency - len(inflight)
                if free:
                    for received in entry.receive(free, wait=wait):
                        inflight[pool.submit(run, received)] = received
                else:
                    wait_futures(list(inflight), timeout=wait, return_when=FIRST_COMPLETED)
                for future in [f for f in inflight if f.done()]:
                    del inflight[future]
                if inflight and time.monotonic() - beat > entry.visibility_timeout / 3:
                    beat = time.monotonic()
                    for received in list(inflight.values()):
                        entry.extend(received)  # a long run keeps its message
            # Finish what is in hand: each message is settled before the pool shuts down.
            while inflight:
                wait_futures(list(inflight), timeout=entry.visibility_timeout / 3)
                for future in [f for f in inflight if f.done()]:
                    del inflight[future]
                for received in list(inflight.values()):
                    entry.extend(received)
    finally:
        if own:
            entry.close()
    logger.info("stopped: %s", settler.report)
    return settler.report


async def aserve_entry(
    handle: Callable[[dict[str, Any]], Awaitable[object]],
    entry: EntryPoint | None = None,
    *,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: asyncio.Event | None = None,
) -> ServeReport:
    """Async :func:`serve_entry`: ``handle`` is a coroutine function, run as concurrent tasks."""
    _check_concurrency(concurrency)
    own = entry is None
    if entry is None:
        from agent_wait.core._entries import default_entry

        entry = default_entry()
    stopped = stop or asyncio.Event()
    settler = _Settler(entry)
    loop = asyncio.get_running_loop()

    async def run(received: Received) -> None:
        try:
            result = await handle(received.message)
        except Exception as error:  # noqa: BLE001 - every failure is settled by the rules
            await asyncio.to_thread(settler.failed, received, error)
        else:
            await asyncio.to_thread(settler.done, received, result)

    installed: list[signal.Signals] = []
    for sig in _SIGNALS:
        try:
            loop.add_signal_handler(sig, stopped.set)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
            continue
        installed.append(sig)
    inflight: dict[asyncio.Task[None], Received] = {}
    beat = time.monotonic()
    try:
        while not stopped.is_set():
            free = concurrency - len(inflight)
            if free:
                for received in await entry.areceive(free, wait):
                    inflight[asyncio.create_task(run(received))] = received
            else:
                await asyncio.wait(
                    list(inflight), timeout=wait, return_when=asyncio.FIRST_COMPLETED
                )
            for task in [t for t in inflight if t.done()]:
                del inflight[task]
            if inflight and time.monotonic() - beat > entry.visibility_timeout / 3:
                beat = time.monotonic()
                for received in list(inflight.values()):
                    await asyncio.to_thread(entry.extend, received)
        while inflight:
            await asyncio.wait(list(inflight), timeout=entry.visibility_timeout / 3)
            for task in [t for t in inflight if t.done()]:
                del inflight[task]
            for received in list(inflight.values()):
                await asyncio.to_thread(entry.extend, received)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        if own:
            entry.close()
    logger.info("stopped: %s", settler.report)
    return settler.report


@contextmanager
def _publishing(
    entry: EntryPoint | None, host_options: dict[str, Any]
) -> Generator[tuple[EntryPoint | None, dict[str, Any]]]:
    """``reply_to=True``: publish the entry point's own description in every envelope."""
    if host_options.get("reply_to") is not True:
        yield entry, host_options
        return
    from agent_wait.core._entries import default_entry

    own = entry is None
    served = default_entry() if entry is None else entry
    try:
        yield served, {**host_options, "reply_to": served.reply_to()}
    finally:
        if own:
            served.close()


def serve_host(
    handle_message: Callable[..., object],
    runnable: object,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: threading.Event | None = None,
    **host_options: Any,
) -> ServeReport:
    """A framework's ``serve``: :func:`serve_entry` with its ``handle_message`` bound.

    Each message is handled with ``handle_message(runnable, message, announce, strict=True,
    **host_options)``: strict, so a failed publish raises and the message is handed out again.
    ``reply_to=True`` publishes the entry point's :meth:`~EntryPoint.reply_to` in every envelope.
    """
    with _publishing(entry, host_options) as (entry, host_options):

        def handle(message: dict[str, Any]) -> object:
            return handle_message(runnable, message, announce, strict=True, **host_options)

        return serve_entry(handle, entry, concurrency=concurrency, wait=wait, stop=stop)


async def aserve_host(
    ahandle_message: Callable[..., Awaitable[object]],
    runnable: object,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: asyncio.Event | None = None,
    **host_options: Any,
) -> ServeReport:
    """Async :func:`serve_host`: :func:`aserve_entry` with ``ahandle_message`` bound."""
    with _publishing(entry, host_options) as (entry, host_options):

        async def handle(message: dict[str, Any]) -> object:
            return await ahandle_message(runnable, message, announce, strict=True, **host_options)

        return await aserve_entry(handle, entry, concurrency=concurrency, wait=wait, stop=stop)
