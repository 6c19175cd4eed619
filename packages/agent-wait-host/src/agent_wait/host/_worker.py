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

An entry point that cannot be reached raises ``ConnectionError`` (or ``TimeoutError``): the
receive, settle or renewal that met it is tried again with exponential backoff and jitter, one
WARNING when the outage starts and one when it ends, until the entry point answers (a settle:
until the message's lease ran out, after which it is handed out again anyway). Anything else an
entry point raises is a bug or a configuration error and stops the loop.

Renewal never touches a message whose settling began: a settle waits for a renewal of its message
in flight, and a renewal skips a message being settled, so a lease found lost really was.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import random
import signal
import threading
import time
from collections import deque
from collections.abc import AsyncIterable, Awaitable, Callable, Generator, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, TypeVar, cast

from pydantic import ValidationError

from agent_wait.core._entry import EntryPoint, Received
from agent_wait.core._logsafe import log_safe
from agent_wait.core._publish import Announce, Clock
from agent_wait.core._trust import AnswerTrust
from agent_wait.host._health import ReadyChecks, check_ready_checks
from agent_wait.host._host import refuse_unknown

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


T = TypeVar("T")

_BACKOFF_FIRST = 0.2
_BACKOFF_LONGEST = 5.0
_STALE_LOOP = 60.0


def is_connection_error(error: BaseException) -> bool:
    """Whether an entry point's error may pass by itself (the broker unreachable, a timeout)."""
    return isinstance(error, ConnectionError | TimeoutError)


class _Backoff:
    """Exponential delays with jitter: from ``_BACKOFF_FIRST`` doubling up to ``_BACKOFF_LONGEST``.

    The jitter (each delay drawn from its upper half) keeps a pool of workers that lost the
    broker together from coming back in step.
    """

    def __init__(self) -> None:
        self.attempts = 0

    def next(self) -> float:
        ceiling = min(_BACKOFF_LONGEST, _BACKOFF_FIRST * 2**self.attempts)
        self.attempts += 1
        return random.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.attempts = 0


class _Link:
    """Whether the entry point answers: one WARNING when an outage starts, one when it ends.

    A single failure is not an outage yet: a connection dropped while idle fails its next call
    once, and the call after that reconnects. Two in a row are.
    """

    def __init__(self, entry: EntryPoint) -> None:
        self.entry = entry
        self.connected = False
        self.down_since: float | None = None
        self._failures = 0
        self._lock = threading.Lock()

    def up(self) -> None:
        with self._lock:
            self.connected = True
            self._failures = 0
            since, self.down_since = self.down_since, None
        if since is not None:
            logger.warning(
                "entry point %r reachable again after %.1f s", self.entry, time.monotonic() - since
            )

    @property
    def failing(self) -> bool:
        """The last call failed."""
        return self._failures > 0

    def down(self, error: BaseException, doing: str) -> None:
        with self._lock:
            self._failures += 1
            began = self._failures == 2
            if began:
                self.connected = False
                self.down_since = time.monotonic()
        if began:
            logger.warning(
                "entry point %r unreachable while %s (%s: %s); retrying with backoff until it "
                "is back",
                self.entry,
                doing,
                type(error).__name__,
                error,
            )
        else:
            logger.debug("entry point %r failed while %s", self.entry, doing, exc_info=error)


@dataclass
class _Lease:
    until: float
    settling: bool = False
    renewing: bool = False


class _Leases:
    """The lease of each message in hand, so that renewing and settling one never cross.

    A settle marks its message first and waits for a renewal of it in flight; a renewal skips a
    marked message. Without that, a renewal pass could extend a message acknowledged a moment
    before, and the entry point would report its lease lost when it never was.
    """

    def __init__(self, entry: EntryPoint, link: _Link) -> None:
        self.entry = entry
        self.link = link
        self._leases: dict[tuple[str, str], _Lease] = {}
        self._changed = threading.Condition()

    def add(self, received: Received) -> None:
        with self._changed:
            self._leases[(received.id, received.receipt)] = _Lease(
                time.monotonic() + self.entry.visibility_timeout
            )

    def drop(self, received: Received) -> None:
        with self._changed:
            self._leases.pop((received.id, received.receipt), None)

    def renew(self, received: Received) -> bool | None:
        """Extend the lease: True, False if it was lost, None if skipped or unreachable."""
        with self._changed:
            lease = self._leases.get((received.id, received.receipt))
            if lease is None or lease.settling:
                return None
            lease.renewing = True
        try:
            renewed = self.entry.extend(received)
        except Exception as error:
            if not is_connection_error(error):
                raise
            self.link.down(error, "renewing leases")
            return None
        finally:
            with self._changed:
                lease.renewing = False
                self._changed.notify_all()
        self.link.up()
        if renewed:
            lease.until = time.monotonic() + self.entry.visibility_timeout
        return renewed

    def settle(self, received: Received) -> float:
        """Mark the message as being settled; returns when its lease runs out (monotonic)."""
        with self._changed:
            lease = self._leases.get((received.id, received.receipt))
            if lease is None:
                return time.monotonic() + self.entry.visibility_timeout
            lease.settling = True
            self._changed.wait_for(lambda: not lease.renewing)
            return lease.until


def _check_concurrency(concurrency: int) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"concurrency: expected a whole number >= 1, got {concurrency!r}")


def _outcome(result: object) -> str:
    outcome = getattr(result, "outcome", None)
    return str(outcome) if outcome is not None else "handled"


def failure_cause(error: BaseException) -> str:
    """One line naming an exception, where it was raised and what it was raised from.

    Never the exceptions' text: it may quote the question or the answer.
    """
    parts: list[str] = []
    current: BaseException | None = error
    while current is not None and len(parts) < 3:
        where = ""
        trace = current.__traceback__
        if trace is not None:
            while trace.tb_next is not None:
                trace = trace.tb_next
            code = trace.tb_frame.f_code
            where = f" in {code.co_name} ({os.path.basename(code.co_filename)}:{trace.tb_lineno})"
        parts.append(f"{type(current).__name__}{where}")
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return ", raised from ".join(parts)


class _Settler:
    """Settles one handled message and counts what happened (shared by both loops)."""

    def __init__(self, entry: EntryPoint) -> None:
        self.entry = entry
        self.report = ServeReport()
        self.link = _Link(entry)
        self.leases = _Leases(entry, self.link)
        self.in_flight = 0
        self._lock = threading.Lock()

    @contextmanager
    def handling(self) -> Generator[None]:
        """Counts a message as in flight from its handler's start until it is settled."""
        with self._lock:
            self.in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def _retrying(self, received: Received, doing: str, call: Callable[[], T]) -> T | None:
        """``call()``, again after a connection error until its lease runs out (then None)."""
        until = self.leases.settle(received)
        backoff = _Backoff()
        while True:
            try:
                result = call()
            except Exception as error:
                if not is_connection_error(error):
                    raise
                self.link.down(error, doing)
                delay = backoff.next()
                if time.monotonic() + delay >= until:
                    logger.warning(
                        "message %s of thread %s could not be settled before its lease ran out "
                        "(the entry point was unreachable); it is handed out again",
                        log_safe(received.id),
                        log_safe(received.thread_id),
                    )
                    return None
                time.sleep(delay)  # a backoff in a pool thread: the loop goes on meanwhile
                continue
            self.link.up()
            return result

    def done(self, received: Received, result: object) -> bool:
        """Acknowledge; True if it was (the thread may go on)."""
        logger.info(
            "message %s of thread %s (attempt %d): %s",
            log_safe(received.id),
            log_safe(received.thread_id),
            received.attempt,
            _outcome(result),
        )
        acknowledged = self._retrying(received, "acknowledging", lambda: self.entry.ack(received))
        with self._lock:
            if acknowledged:
                self.report.acknowledged += 1
            else:
                self.report.lost_leases += 1
        return bool(acknowledged)

    def failed(self, received: Received, error: Exception) -> bool:
        """Fail it; True if it was dead-lettered (the thread may go on past it)."""
        poison = isinstance(error, ValidationError)
        logger.warning(
            "message %s of thread %s (attempt %d) failed: %s%s",
            log_safe(received.id),
            log_safe(received.thread_id),
            received.attempt,
            failure_cause(error),
            " (malformed, not retried)" if poison else "",
        )
        logger.debug("message %s failed with", log_safe(received.id), exc_info=error)
        dead = self._retrying(
            received,
            "handing back a failed message",
            lambda: self.entry.fail(received, f"{type(error).__name__}: {error}", retry=not poison),
        )
        with self._lock:
            if dead is None:
                self.report.lost_leases += 1
            elif dead:
                self.report.dead_lettered += 1
            else:
                self.report.retried += 1
        return bool(dead)

    def release(self, held: Iterable[Received], why: str) -> None:
        """Give back messages that were held, not started."""
        for received in held:
            self.leases.drop(received)
            try:
                released = self.entry.release(received)
            except Exception as error:  # noqa: BLE001 - its lease runs out; it comes back then
                if is_connection_error(error):
                    self.link.down(error, "releasing held messages")
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


class ServeStatus:
    """A running worker as an operator sees it, read while it runs.

    The health endpoints (``serve(..., health=PORT)``) answer from it, and the
    ``worker_started`` hook gets it (the OpenTelemetry plugin reads its figures when metrics
    are collected).

    Attributes:
        entry: The entry point served.
        report: What the worker did so far, counted as it goes.
        health_address: ``(host, port)`` the health endpoints listen on, when they do.
    """

    def __init__(
        self,
        entry: EntryPoint,
        settler: _Settler,
        held: Callable[[], int],
    ) -> None:
        self.entry = entry
        self.report = settler.report
        self.health_address: tuple[str, int] | None = None
        self._settler = settler
        self._link = settler.link
        self._held = held
        self._turned = time.monotonic()

    def turned(self) -> None:
        """The loop went round once more."""
        self._turned = time.monotonic()

    @property
    def in_flight(self) -> int:
        """Messages being handled now (from their handler's start until they are settled)."""
        return self._settler.in_flight

    @property
    def held(self) -> int:
        """Messages received and waiting for their thread or a free slot."""
        return self._held()

    @property
    def alive(self) -> bool:
        """The loop turned within the last minute (a receive waits at most ``wait`` seconds)."""
        return time.monotonic() - self._turned < _STALE_LOOP

    @property
    def ready(self) -> bool:
        """The entry point answered its last call (False before the first and in an outage)."""
        return self._link.connected

    @property
    def outage(self) -> float | None:
        """Seconds the entry point has been unreachable, None when it answers."""
        since = self._link.down_since
        return None if since is None else time.monotonic() - since

    def oldest_waiting(self) -> float | None:
        """Seconds the oldest message ready to be handed out has waited, None when unknown."""
        return self.entry.oldest_waiting()


@contextmanager
def _observed(
    status: ServeStatus, health: int | str | None, ready: ReadyChecks | None
) -> Generator[None]:
    """The health endpoints and the ``worker_started`` / ``worker_stopped`` hooks, around a loop."""
    from agent_wait.core._plugins import registry
    from agent_wait.host._health import HealthServer

    server = None if health is None else HealthServer(status, health, ready)
    if server is not None:
        status.health_address = server.address
    hook = registry().manager.hook
    try:
        hook.worker_started(status=status)
    except Exception:
        logger.exception("worker_started hook call failed")
    try:
        yield
    finally:
        try:
            hook.worker_stopped(status=status)
        except Exception:
            logger.exception("worker_stopped hook call failed")
        if server is not None:
            server.close()


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
    health: int | str | None = None,
    ready: ReadyChecks | None = None,
) -> ServeReport:
    """Handle messages from ``entry`` with ``handle`` until stopped (SIGTERM, SIGINT, ``stop``).

    An entry point that cannot be reached (``ConnectionError``, ``TimeoutError``) is tried again
    with backoff until it is back; only another error of the entry point (a configuration
    error, a bug) ends the loop early, raised.

    Args:
        handle: Handles one message (the received JSON object); raising means "not handled".
        entry: Where messages come from (default: the configured entry point, closed on return).
        concurrency: How many threads are handled at once.
        wait: Seconds each receive waits for a message (the longest a stop waits for it).
        stop: Set it to stop the loop (from another thread, or when not on the main thread).
        health: Serve ``/healthz`` and ``/readyz`` over HTTP on this port (``"host:port"``,
            or a port on every interface) while the loop runs.
        ready: What ``handle`` needs besides the entry point, by name (``{"checkpointer":
            check}``): ``/readyz`` calls each check and answers 503 naming those that raised.

    Returns:
        What was acknowledged, retried and dead-lettered.

    Raises:
        TypeError: ``ready`` is not a mapping of names to callables.
    """
    _check_concurrency(concurrency)
    checks = check_ready_checks(ready)
    own = entry is None
    if entry is None:
        from agent_wait.core._entries import default_entry

        entry = default_entry()
    stopped = stop or threading.Event()
    settler = _Settler(entry)
    leases = settler.leases

    def run(received: Received) -> bool:
        with settler.handling():
            try:
                result = handle(received.message)
            except Exception as error:  # noqa: BLE001 - every failure is settled by the rules
                return settler.failed(received, error)
            return settler.done(received, result)

    running: dict[Future[bool], Received] = {}
    hand = _Hand()
    status = ServeStatus(entry, settler, lambda: len(hand))
    beat = time.monotonic()
    receiving = _Backoff()
    renewing = _Backoff()
    logger.info("serving %r with concurrency %d", entry, concurrency)
    try:
        with (
            ThreadPoolExecutor(concurrency, "agent-wait-serve") as pool,
            _stop_on_signals(stopped.set),
            _observed(status, health, checks),
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
                    leases.drop(received)
                    later = hand.finished(received, settled=_settled(future, received))
                    settler.release(later, f"behind {log_safe(received.id)}, which was not settled")
                start()

            def renew() -> None:
                nonlocal beat
                period = entry.visibility_timeout / 3
                if time.monotonic() - beat <= period:
                    return
                beat = time.monotonic()
                for received in list(running.values()):
                    if leases.renew(received) is None and settler.link.failing:
                        # Unreachable: the next pass comes after a backoff, not a whole period.
                        beat = time.monotonic() - period + renewing.next()
                        return
                for received in hand.held():
                    if not hand.holds(received):
                        continue
                    renewed = leases.renew(received)
                    if renewed is None and settler.link.failing:
                        beat = time.monotonic() - period + renewing.next()
                        return
                    if renewed is False:
                        # Handed out again: the thread's later held ones must not overtake it.
                        settler.lost()
                        leases.drop(received)
                        settler.release(
                            hand.lost(received), f"behind {log_safe(received.id)}, lease lost"
                        )
                renewing.reset()

            try:
                while not stopped.is_set():
                    status.turned()
                    reap()
                    size = _receive_size(entry, concurrency, len(running), len(hand))
                    got: list[Received] = []
                    if size:
                        # Held messages wait behind running ones: no long poll that would
                        # keep them waiting after their turn came.
                        try:
                            got = entry.receive(size, wait=0.0 if len(hand) else wait)
                        except Exception as error:
                            if not is_connection_error(error):
                                raise
                            settler.link.down(error, "receiving")
                            # The running messages finish and settle meanwhile.
                            stopped.wait(receiving.next())
                        else:
                            settler.link.up()
                            receiving.reset()
                        for received in got:
                            leases.add(received)
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
                status.turned()
                wait_futures(list(running), timeout=entry.visibility_timeout / 3)
                for future in [f for f in running if f.done()]:
                    leases.drop(running.pop(future))
                for received in list(running.values()):
                    leases.renew(received)
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
    health: int | str | None = None,
    ready: ReadyChecks | None = None,
) -> ServeReport:
    """Async :func:`serve_entry`: ``handle`` is a coroutine function, run as concurrent tasks.

    The ``ready`` checks are plain callables, called from the health server's thread.
    """
    _check_concurrency(concurrency)
    checks = check_ready_checks(ready)
    own = entry is None
    if entry is None:
        from agent_wait.core._entries import default_entry

        entry = default_entry()
    stopped = stop or asyncio.Event()
    settler = _Settler(entry)
    leases = settler.leases
    loop = asyncio.get_running_loop()

    async def run(received: Received) -> bool:
        with settler.handling():
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
    status = ServeStatus(entry, settler, lambda: len(hand))
    beat = time.monotonic()
    receiving = _Backoff()
    renewing = _Backoff()

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
            leases.drop(received)
            later = hand.finished(received, settled=_settled(task, received))
            if later:
                await asyncio.to_thread(
                    settler.release, later, f"behind {log_safe(received.id)}, which was not settled"
                )
        start()

    async def renew() -> None:
        nonlocal beat
        period = entry.visibility_timeout / 3
        if time.monotonic() - beat <= period:
            return
        beat = time.monotonic()
        for received in list(running.values()):
            renewed = await asyncio.to_thread(leases.renew, received)
            if renewed is None and settler.link.failing:
                beat = time.monotonic() - period + renewing.next()
                return
        for received in hand.held():
            if not hand.holds(received):
                continue
            renewed = await asyncio.to_thread(leases.renew, received)
            if renewed is None and settler.link.failing:
                beat = time.monotonic() - period + renewing.next()
                return
            if renewed is False:
                settler.lost()
                leases.drop(received)
                await asyncio.to_thread(
                    settler.release,
                    hand.lost(received),
                    f"behind {log_safe(received.id)}, lease lost",
                )
        renewing.reset()

    try:
        with _observed(status, health, checks):
            try:
                while not stopped.is_set():
                    status.turned()
                    await reap()
                    size = _receive_size(entry, concurrency, len(running), len(hand))
                    got: list[Received] = []
                    if size:
                        try:
                            got = await entry.areceive(size, 0.0 if len(hand) else wait)
                        except Exception as error:
                            if not is_connection_error(error):
                                raise
                            settler.link.down(error, "receiving")
                            with contextlib.suppress(TimeoutError):
                                await asyncio.wait_for(stopped.wait(), receiving.next())
                        else:
                            settler.link.up()
                            receiving.reset()
                        for received in got:
                            leases.add(received)
                            hand.add(received)
                        start()
                    if running and (not size or (not got and len(hand))):
                        await asyncio.wait(
                            list(running),
                            timeout=min(
                                wait,
                                max(0.0, beat + entry.visibility_timeout / 3 - time.monotonic()),
                            ),
                            return_when=asyncio.FIRST_COMPLETED,
                        )
                    await renew()
            finally:
                await asyncio.to_thread(settler.release, hand.take_all(), "the worker stopped")
            while running:
                status.turned()
                await asyncio.wait(list(running), timeout=entry.visibility_timeout / 3)
                for task in [t for t in running if t.done()]:
                    leases.drop(running.pop(task))
                for received in list(running.values()):
                    await asyncio.to_thread(leases.renew, received)
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


class ServeOptions(TypedDict, total=False):
    """How a framework's ``serve`` and ``aserve`` run: keyword arguments every framework's worker takes.

    Besides these, ``stop`` and the options of the framework's own ``handle_message`` (its
    :class:`FrameworkWorker`'s ``options`` lists them); a name the worker does not take is
    refused with ``TypeError`` before it starts, not at every message. Each message is handled
    with ``strict=True``: a failed publish leaves it to be handed out again.
    """

    concurrency: int
    """How many threads are handled at once. Default: 4."""
    wait: float
    """Seconds each receive waits (the longest a stop waits for it). Default: 1.0."""
    stream: Callable[[str, Any], object] | None
    """``stream(thread_id, event)`` for every event of every run (with ``aserve``, a coroutine
    function is awaited): each message is then handled with the framework's ``stream_message``
    (``astream_message``). A ``stream`` that raises stops that run; nothing of it is published
    and the message is handed out again."""
    health: int | str | None
    """Serve ``/healthz`` and ``/readyz`` on this port (or ``"host:port"``); ``/readyz`` also
    reads the framework's store (checkpointer, history, sessions) where the worker knows it, and
    answers 503 naming it when that fails."""
    reply_to: Mapping[str, Any] | Literal[True] | None
    """A hint for where answers go, copied into every envelope; True: the entry point's own
    (:meth:`~agent_wait.core.EntryPoint.reply_to`)."""
    clock: Clock | None
    """Returns "now" (aware); ``expires_at`` is measured from it."""
    trust: AnswerTrust | None
    """What an answer must satisfy before anything runs (see
    :class:`~agent_wait.host.MessageOptions`)."""


_LOOP_OPTIONS = ("concurrency", "wait", "health")
"""The :class:`ServeOptions` the loop itself takes; the rest go to each message's handling."""


@dataclass(frozen=True)
class FrameworkWorker:
    """A framework package's ``serve`` and ``aserve``: its entry points bound to the worker loop.

    Built once per framework; its ``serve(runnable, entry, announce, stop, options)`` checks the
    option names against ``options`` (a :class:`ServeOptions` TypedDict extended with the
    framework's own; None: any name, passed on), adds the readiness checks ``ready(runnable,
    options)`` gives, and runs :func:`serve_host`; ``aserve`` likewise :func:`aserve_host`.

    Attributes:
        handle_message: The framework's ``handle_message``.
        ahandle_message: Its ``ahandle_message``.
        stream_message: Its ``stream_message`` (None: it does not stream).
        astream_message: Its ``astream_message``.
        options: The keyword arguments its ``serve`` takes (a TypedDict), or None. Its
            ``Required`` keys are refused when missing as the TypedDict reports them: one
            defined in a module with ``from __future__ import annotations`` reports none.
        ready: The checks ``/readyz`` runs besides the entry point's, for a runnable and the
            options; called before the worker starts, it may refuse an option combination
            with ``TypeError`` (LangGraph's refuses stream options without ``stream``).
    """

    handle_message: Callable[..., object]
    ahandle_message: Callable[..., Awaitable[object]]
    stream_message: Callable[..., Iterable[Any]] | None = None
    astream_message: Callable[..., AsyncIterable[Any]] | None = None
    options: type | None = None
    ready: Callable[[Any, Mapping[str, Any]], ReadyChecks | None] | None = None

    def serve(
        self,
        runnable: object,
        entry: EntryPoint | None,
        announce: Announce,
        stop: threading.Event | None,
        options: Mapping[str, Any],
    ) -> ServeReport:
        """Run the worker (see :func:`serve_host`)."""
        ready = self._ready(runnable, options, "serve")
        handle, stream = self.handle_message, self.stream_message
        return serve_host(
            handle, runnable, entry, announce, stop=stop, stream_message=stream, ready=ready,
            **options,
        )  # fmt: skip

    async def aserve(
        self,
        runnable: object,
        entry: EntryPoint | None,
        announce: Announce,
        stop: asyncio.Event | None,
        options: Mapping[str, Any],
    ) -> ServeReport:
        """Run the async worker (see :func:`aserve_host`)."""
        ready = self._ready(runnable, options, "aserve")
        handle, stream = self.ahandle_message, self.astream_message
        return await aserve_host(
            handle, runnable, entry, announce, stop=stop, astream_message=stream, ready=ready,
            **options,
        )  # fmt: skip

    def _ready(
        self, runnable: object, options: Mapping[str, Any], caller: str
    ) -> ReadyChecks | None:
        """Refuse options ``self.options`` does not take or requires; the readiness checks."""
        if self.options is not None:
            required = cast("frozenset[str]", getattr(self.options, _REQUIRED))
            missing = sorted(required - set(options))
            if missing:
                raise TypeError(f"{caller}() missing required keyword argument {missing[0]!r}")
            optional = cast("frozenset[str]", getattr(self.options, _OPTIONAL))
            refuse_unknown(options, required | optional, caller)
        return None if self.ready is None else self.ready(runnable, options)


# A TypedDict's names: those it requires and those it does not.
_REQUIRED, _OPTIONAL = "__required_keys__", "__optional_keys__"


def _loop_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` split: what the loop takes (:data:`_LOOP_OPTIONS`), what each message gets."""
    loop = {name: options[name] for name in _LOOP_OPTIONS if name in options}
    handling = {name: value for name, value in options.items() if name not in _LOOP_OPTIONS}
    return loop, handling


def serve_host(
    handle_message: Callable[..., object],
    runnable: object,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: threading.Event | None = None,
    stream_message: Callable[..., Iterable[Any]] | None = None,
    ready: ReadyChecks | None = None,
    **options: Any,
) -> ServeReport:
    """A framework's ``serve``: :func:`serve_entry` with its ``handle_message`` bound.

    ``options`` are :class:`ServeOptions` and the framework's ``handle_message`` options. Each
    message is handled with ``handle_message(runnable, message, announce, strict=True,
    **handle_options)``: strict, so a failed publish raises and the message is handed out again.
    ``reply_to=True`` publishes the entry point's :meth:`~EntryPoint.reply_to` in every envelope.
    With ``stream``, the framework's ``stream_message`` handles it instead, and
    ``stream(thread_id, event)`` is called with each event as the run makes it; a ``stream``
    that raises stops the run (nothing of it is saved or published) and the message is handed
    out again. ``health`` serves the health endpoints, ``ready`` adds readiness checks (the
    framework's checkpointer; see :func:`serve_entry`).
    """
    loop, host_options = _loop_options(options)
    stream = host_options.pop("stream", None)
    handle_one = _streaming(stream_message, stream) if stream is not None else handle_message
    with _publishing(entry, host_options) as (entry, host_options):

        def handle(message: dict[str, Any]) -> object:
            return handle_one(runnable, message, announce, strict=True, **host_options)

        return serve_entry(handle, entry, stop=stop, ready=ready, **loop)


async def aserve_host(
    ahandle_message: Callable[..., Awaitable[object]],
    runnable: object,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: asyncio.Event | None = None,
    astream_message: Callable[..., AsyncIterable[Any]] | None = None,
    ready: ReadyChecks | None = None,
    **options: Any,
) -> ServeReport:
    """Async :func:`serve_host`: :func:`aserve_entry` with ``ahandle_message`` bound.

    With ``stream``, ``astream_message`` handles each message and ``stream(thread_id, event)``
    is called (and awaited, when it returns an awaitable) with each event.
    """
    loop, host_options = _loop_options(options)
    stream = host_options.pop("stream", None)
    handle_one = _astreaming(astream_message, stream) if stream is not None else ahandle_message
    with _publishing(entry, host_options) as (entry, host_options):

        async def handle(message: dict[str, Any]) -> object:
            return await handle_one(runnable, message, announce, strict=True, **host_options)

        return await aserve_entry(handle, entry, stop=stop, ready=ready, **loop)


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
