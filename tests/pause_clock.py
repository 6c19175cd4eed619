"""A fake monotonic clock for pause tests: time moves only when a wait sleeps on it."""

from __future__ import annotations

import asyncio
import threading

# What a 3 s wait with a heartbeat every second streams: (progress, remaining_seconds, total).
THREE_BEATS = [(0, 3, 3), (1, 2, 3), (2, 1, 3)]


class FakeClock:
    """Pass it as the policy's ``clock`` and its ``sleep``/``asleep`` as the tool's.

    Attributes:
        now: The current monotonic seconds.
        slept: Every wait's length, in order.
    """

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


class ConsumerPaced:
    """A tool's ``sleep``/``asleep`` that goes on only once the stream's consumer holds the beat.

    The consumer calls :meth:`received` on each heartbeat it reads. Beats that were buffered
    until the tool returned never arrive while the tool waits: each such step is recorded in
    ``missed`` (after 30 s) instead of hanging the test.

    Attributes:
        clock: The fake clock each step then sleeps on.
        missed: The clock's time at each step whose beat the consumer did not hold.
    """

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.missed: list[float] = []
        self._held = threading.Event()  # the sync tool runs in a worker thread
        self._aheld = asyncio.Event()

    def received(self) -> None:
        self._held.set()
        self._aheld.set()

    def sleep(self, seconds: float) -> None:
        if not self._held.wait(30):
            self.missed.append(self.clock.now)
        self._held.clear()
        self.clock.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._aheld.wait(), 30)
        except TimeoutError:
            self.missed.append(self.clock.now)
        self._aheld.clear()
        self.clock.sleep(seconds)
