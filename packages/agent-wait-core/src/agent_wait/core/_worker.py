"""The host's worker loop: receive from an entry point, handle, acknowledge by the rules.

Framework-agnostic: it takes the function that handles one message (a framework's
``handle_message`` with the runnable bound), so each framework's ``serve`` is a few lines.

The rules:

- the handler returned (whatever the outcome: started, resumed, duplicate...): acknowledge;
- the message is malformed (``pydantic.ValidationError``): it can never succeed, dead-letter it;
- the handler raised anything else (``AnnounceFailed`` included): fail it, so it is handed out
  again after the entry point's retry delay, and dead-lettered after ``max_attempts``;
- the process dies: nothing is settled, the lease runs out and the message is handed out again.

Messages of one thread are handled one at a time, in the order received, and different threads
in parallel, up to ``concurrency``. A receive may bring several messages of one thread (an SQS
FIFO batch), or more than there are free slots (an entry point's ``receive_batch``): the worker
holds them, renews their leases with those of the running ones, and starts each when its thread
and a slot are free. When a thread's message is not settled (handed back for a retry, or its
lease ran out), the thread's held messages are released, so the entry point hands them out
again after it, in order. SIGTERM and SIGINT stop receiving: the held messages are released at
once, the running ones are finished and settled before the loop returns.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import signal
import threading
import time
from collections import deque
from collections.abc import AsyncIterable, Awaitable, Callable, Generator, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agent_wait.core._entry import EntryPoint, Received
from agent_wait.core._logsafe import log_safe
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
        released: Messages received but given back unhandled: held behind a message of their
            thread that was not settled, or held when the worker stopped.
    """

    acknowledged: int = 0
    retried: int = 0
    dead_lettered: int = 0
    lost_leases: int = 0
    released: int = 0


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

    def done(self, received: Received, result: object) -> bool:
        """Acknowledge; True if it was (the thread may go on)."""
        logger.info(
            "message %s of thread %s (attempt %d): %s",
            log_safe(received.id),
            log_safe(received.thread_id),
            received.attempt,
            _outcome(result),
        )
        acknowledged = self.entry.ack(received)
        with self._lock:
            if acknowledged:
                self.report.acknowledged += 1
            else:
                self.report.lost_leases += 1
        return acknowledged

    def failed(self, received: Received, error: Exception) -> bool:
        """Fail it; True if it was dead-lettered (the thread may go on past it)."""
        poison = isinstance(error, ValidationError)
        # The type only at WARNING: an error's text may quote the question or the answer.
        logger.warning(
            "message %s of thread %s (attempt %d) failed: %s%s",
            log_safe(received.id),
            log_safe(received.thread_id),
            received.attempt,
            type(error).__name__,
            " (malformed, not retried)" if poison else "",
        )
        logger.debug("message %s failed with", log_safe(received.id), exc_info=error)
        dead = self.entry.fail(received, f"{type(error).__name__}: {error}", retry=not poison)
        with self._lock:
            if dead:
                self.report.dead_lettered += 1
            else:
                self.report.retried += 1
        return dead

    def release(self, held: Iterable[Received], why: str) -> None:
        """Give back messages that were held, not started."""
        for received in held:
            try:
                released = self.entry.release(received)
            except Exception as error:  # noqa: BLE001 - its lease runs out; it comes back then
                logger.warning(
                    "message %s of thread %s could not be released (%s); it comes back when its "
                    "lease runs out",
                    log_safe(received.id),
                    log_safe(received.thread_id),
                    type(error).__name__,
                )
                continue
            logger.debug(
                "message %s of thread %s released: %s",
                log_safe(received.id),
                log_safe(received.thread_id),
                why,
            )
            if released:
                with self._lock:
                    self.report.released += 1

    def lost(self) -> None:
        with self._lock:
            self.report.lost_leases += 1


class _Hand:
    """Messages received and not started yet, per thread in receive order.

    It knows which threads have a message running: a thread's next one starts only after it
    (shared by both loops).
    """

    def __init__(self) -> None:
        self._held: dict[str, deque[tuple[int, Received]]] = {}
        self._running: set[str] = set()
        self._count = 0  # receive order across threads: the longest held starts first

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._held.values())

    def add(self, received: Received) -> None:
        self._count += 1
        self._held.setdefault(received.thread_id, deque()).append((self._count, received))

    def start(self) -> Received | None:
        """The next message whose thread has none running (marked running), or None."""
        ready = [
            (queue[0][0], thread)
            for thread, queue in self._held.items()
            if thread not in self._running
        ]
        if not ready:
            return None
        _, thread = min(ready)
        queue = self._held[thread]
        _, received = queue.popleft()
        if not queue:
            del self._held[thread]
        self._running.add(thread)
        return received

    def finished(self, received: Received, *, settled: bool) -> list[Received]:
        """Its thread may go on; returns the held messages to give back if it was not settled.

        Those received before it comes back would overtake it: they go back, so the entry
        point hands them out again after it. Its own redelivery (same id), when already
        received, and what came after it stay.
        """
        self._running.discard(received.thread_id)
        queue = self._held.get(received.thread_id)
        if settled or queue is None:
            return []
        behind: list[Received] = []
        while queue and queue[0][1].id != received.id:
            behind.append(queue.popleft()[1])
        if not queue:
            del self._held[received.thread_id]
        return behind

    def holds(self, received: Received) -> bool:
        return any(held is received for _, held in self._held.get(received.thread_id, ()))

    def held(self) -> list[Received]:
        return [received for queue in self._held.values() for _, received in queue]

    def lost(self, received: Received) -> list[Received]:
        """``received``'s lease ran out: the thread's held messages after it must go back."""
        queue = self._held.get(received.thread_id, deque())
        for index, (_, held) in enumerate(queue):
            if held is received:
                later = [item for _, item in list(queue)[index + 1 :]]
                kept = deque(list(queue)[:index])
                if kept:
                    self._held[received.thread_id] = kept
                else:
                    del self._held[received.thread_id]
                return later
        return []

    def take_all(self) -> list[Received]:
        held = self.held()
        self._held.clear()
        return held


def _receive_size(entry: EntryPoint, concurrency: int, running: int, held: int) -> int:
    """How many to ask for: at least the free slots, or a whole ``receive_batch``.

    No more than ``concurrency + receive_batch`` messages are ever in hand.
    """
    batch = max(1, entry.receive_batch)
    free = concurrency - running
    if free <= 0:
        return 0
    return max(0, min(max(free, batch), concurrency + batch - running - held))


def _settled(done: Future[bool] | asyncio.Task[bool], received: Received) -> bool:
    """Whether a finished run settled its message (acknowledged or dead-lettered)."""
    error = None if done.cancelled() else done.exception()
    if error is None and not done.cancelled():
        return done.result()
    # Settling itself raised (the entry point was unreachable): the lease runs out.
    logger.warning(
        "message %s of thread %s could not be settled: %s",
        log_safe(received.id),
        log_safe(received.thread_id),
        "cancelled" if error is None else type(error).__name__,
    )
    return False


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

    def run(received: Received) -> bool:
        try:
            result = handle(received.message)
        except Exception as error:  # noqa: BLE001 - every failure is settled by the rules
            return settler.failed(received, error)
        return settler.done(received, result)

    running: dict[Future[bool], Received] = {}
    hand = _Hand()
    beat = time.monotonic()
    logger.info("serving %r with concurrency %d", entry, concurrency)
    try:
        with (
            ThreadPoolExecutor(concurrency, "agent-wait-serve") as pool,
            _stop_on_signals(stopped.set),
        ):

            def start() -> None:
                # Nothing new once stopping: the held messages are about to be released.
                while (
                    not stopped.is_set()
                    and len(running) < concurrency
                    and (received := hand.start()) is not None
                ):
                    running[pool.submit(run, received)] = received

            def reap() -> None:
                for future in [f for f in running if f.done()]:
                    received = running.pop(future)
                    later = hand.finished(received, settled=_settled(future, received))
                    settler.release(later, f"behind {log_safe(received.id)}, which was not settled")
                start()

            def renew() -> None:
                nonlocal beat
                if time.monotonic() - beat <= entry.visibility_timeout / 3:
                    return
                beat = time.monotonic()
                for received in list(running.values()):
                    entry.extend(received)  # a long run keeps its message
                for received in hand.held():
                    if hand.holds(received) and not entry.extend(received):
                        # Handed out again: the thread's later held ones must not overtake it.
                        settler.lost()
                        settler.release(
                            hand.lost(received), f"behind {log_safe(received.id)}, lease lost"
                        )

            try:
                while not stopped.is_set():
                    reap()
                    size = _receive_size(entry, concurrency, len(running), len(hand))
                    got: list[Received] = []
                    if size:
                        # Held messages wait behind running ones: no long poll that would
                        # keep them waiting after their turn came.
                        got = entry.receive(size, wait=0.0 if len(hand) else wait)
                        for received in got:
                            hand.add(received)
                        start()
                    if running and (not size or (not got and len(hand))):
                        wait_futures(
                            list(running),
                            timeout=min(
                                wait,
                                max(0.0, beat + entry.visibility_timeout / 3 - time.monotonic()),
                            ),
                            return_when=FIRST_COMPLETED,
                        )
                    renew()
            finally:
                # Held messages go back at once, not when their leases run out.
                settler.release(hand.take_all(), "the worker stopped")
            # Finish what is in hand: each message is settled before the pool shuts down.
            while running:
                wait_futures(list(running), timeout=entry.visibility_timeout / 3)
                for future in [f for f in running if f.done()]:
                    del running[future]
                for received in list(running.values()):
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

    async def run(received: Received) -> bool:
        try:
            result = await handle(received.message)
        except Exception as error:  # noqa: BLE001 - every failure is settled by the rules
            return await asyncio.to_thread(settler.failed, received, error)
        return await asyncio.to_thread(settler.done, received, result)

    installed: list[signal.Signals] = []
    for sig in _SIGNALS:
        try:
            loop.add_signal_handler(sig, stopped.set)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
            continue
        installed.append(sig)
    running: dict[asyncio.Task[bool], Received] = {}
    hand = _Hand()
    beat = time.monotonic()

    def start() -> None:
        while (
            not stopped.is_set()
            and len(running) < concurrency
            and (received := hand.start()) is not None
        ):
            running[asyncio.create_task(run(received))] = received

    async def reap() -> None:
        for task in [t for t in running if t.done()]:
            received = running.pop(task)
            later = hand.finished(received, settled=_settled(task, received))
            if later:
                await asyncio.to_thread(
                    settler.release, later, f"behind {log_safe(received.id)}, which was not settled"
                )
        start()

    async def renew() -> None:
        nonlocal beat
        if time.monotonic() - beat <= entry.visibility_timeout / 3:
            return
        beat = time.monotonic()
        for received in list(running.values()):
            await asyncio.to_thread(entry.extend, received)
        for received in hand.held():
            if hand.holds(received) and not await asyncio.to_thread(entry.extend, received):
                settler.lost()
                await asyncio.to_thread(
                    settler.release,
                    hand.lost(received),
                    f"behind {log_safe(received.id)}, lease lost",
                )

    try:
        try:
            while not stopped.is_set():
                await reap()
                size = _receive_size(entry, concurrency, len(running), len(hand))
                got: list[Received] = []
                if size:
                    got = await entry.areceive(size, 0.0 if len(hand) else wait)
                    for received in got:
                        hand.add(received)
                    start()
                if running and (not size or (not got and len(hand))):
                    await asyncio.wait(
                        list(running),
                        timeout=min(
                            wait, max(0.0, beat + entry.visibility_timeout / 3 - time.monotonic())
                        ),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                await renew()
        finally:
            await asyncio.to_thread(settler.release, hand.take_all(), "the worker stopped")
        while running:
            await asyncio.wait(list(running), timeout=entry.visibility_timeout / 3)
            for task in [t for t in running if t.done()]:
                del running[task]
            for received in list(running.values()):
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
    stream: Callable[[str, Any], object] | None = None,
    stream_message: Callable[..., Iterable[Any]] | None = None,
    **host_options: Any,
) -> ServeReport:
    """A framework's ``serve``: :func:`serve_entry` with its ``handle_message`` bound.

    Each message is handled with ``handle_message(runnable, message, announce, strict=True,
    **host_options)``: strict, so a failed publish raises and the message is handed out again.
    ``reply_to=True`` publishes the entry point's :meth:`~EntryPoint.reply_to` in every envelope.
    With ``stream``, the framework's ``stream_message`` handles it instead, and
    ``stream(thread_id, event)`` is called with each event as the run makes it; a ``stream``
    that raises stops the run (nothing of it is saved or published) and the message is handed
    out again.
    """
    handle_one = _streaming(stream_message, stream) if stream is not None else handle_message
    with _publishing(entry, host_options) as (entry, host_options):

        def handle(message: dict[str, Any]) -> object:
            return handle_one(runnable, message, announce, strict=True, **host_options)

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
    stream: Callable[[str, Any], object] | None = None,
    astream_message: Callable[..., AsyncIterable[Any]] | None = None,
    **host_options: Any,
) -> ServeReport:
    """Async :func:`serve_host`: :func:`aserve_entry` with ``ahandle_message`` bound.

    With ``stream``, ``astream_message`` handles each message and ``stream(thread_id, event)``
    is called (and awaited, when it returns an awaitable) with each event.
    """
    handle_one = _astreaming(astream_message, stream) if stream is not None else ahandle_message
    with _publishing(entry, host_options) as (entry, host_options):

        async def handle(message: dict[str, Any]) -> object:
            return await handle_one(runnable, message, announce, strict=True, **host_options)

        return await aserve_entry(handle, entry, concurrency=concurrency, wait=wait, stop=stop)


def _streaming(
    stream_message: Callable[..., Iterable[Any]] | None, stream: Callable[[str, Any], object]
) -> Callable[..., object]:
    """``handle_message`` made of a framework's ``stream_message``, each event handed to ``stream``."""
    if stream_message is None:
        raise TypeError("stream: this host does not stream (it has no stream_message)")
    if not callable(stream):
        raise TypeError(f"stream: expected a callable(thread_id, event), got {stream!r}")

    def handle(runnable: object, message: dict[str, Any], *args: Any, **options: Any) -> object:
        run: Any = stream_message(runnable, message, *args, **options)
        thread_id = str(message.get("thread_id"))
        for event in run:
            stream(thread_id, event)
        return run.handled

    return handle


def _astreaming(
    astream_message: Callable[..., AsyncIterable[Any]] | None,
    stream: Callable[[str, Any], object],
) -> Callable[..., Awaitable[object]]:
    """Async :func:`_streaming`: ``stream`` may be a coroutine function."""
    if astream_message is None:
        raise TypeError("stream: this host does not stream (it has no astream_message)")
    if not callable(stream):
        raise TypeError(f"stream: expected a callable(thread_id, event), got {stream!r}")

    async def handle(
        runnable: object, message: dict[str, Any], *args: Any, **options: Any
    ) -> object:
        run: Any = astream_message(runnable, message, *args, **options)
        thread_id = str(message.get("thread_id"))
        async for event in run:
            shown = stream(thread_id, event)
            if inspect.isawaitable(shown):
                await shown
        return run.handled

    return handle
