"""A fake monotonic clock for pause tests: time moves only when a wait sleeps on it."""

from __future__ import annotations


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
