"""pause / apause: one agent_wait call end to end on the shared policy, with a fake clock."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent_wait.pause import (
    HEARTBEAT_TYPE,
    PauseHeartbeat,
    PauseLimits,
    PausePolicy,
    PauseRequest,
    apause,
    await_grant,
    pause,
    refusal_result,
)
from tests.pause_clock import FakeClock


def make(clock: FakeClock, **limits: int) -> PausePolicy:
    return PausePolicy(PauseLimits(**limits), clock=clock)  # type: ignore[arg-type]


def test_a_wait_is_clipped_charged_and_audited(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    policy = make(clock, max_seconds_per_call=20, max_seconds_per_turn=30, max_calls_per_turn=3)
    args = {"seconds": 45, "user_message": "Waiting for the queue.", "reason": "drain"}

    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        first = pause(policy, args, user="u-1", turn="m-1", sleep=clock.sleep)
    assert clock.slept == [20]
    assert first["waited_seconds"] == 20
    assert first["granted_seconds"] == 20
    assert first["requested_seconds"] == 45
    assert first["clipped_by"] == "per_call"
    assert first["cap_seconds"] == 20
    assert first["turn_seconds_remaining"] == 10
    assert first["turn_calls_remaining"] == 2
    assert "outcome=completed user='u-1' turn='m-1' requested=45 granted=20" in caplog.text
    assert "Waiting for the queue." not in caplog.text

    second = pause(policy, args, user="u-1", turn="m-1", sleep=clock.sleep)
    assert second["clipped_by"] == "per_turn"
    assert second["granted_seconds"] == 10

    # The turn's budget is spent: refused without waiting, and the model is told why.
    third = pause(policy, args, user="u-1", turn="m-1", sleep=clock.sleep)
    assert third["refused"] == "turn_budget_exhausted"
    assert "AGENT_WAIT_MAX_SECONDS_PER_TURN" in third["message"]
    assert clock.slept == [20, 10]


def test_invalid_arguments_and_ids_are_refused_naming_the_field(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    policy = make(clock)
    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        bad_seconds = pause(policy, {"seconds": "5", "user_message": "hi"}, sleep=clock.sleep)
    assert bad_seconds["refused"] == "invalid_input"
    assert "seconds must be a whole number" in bad_seconds["message"]
    assert "outcome=invalid field=seconds" in caplog.text

    bad_turn = pause(policy, {"seconds": 1, "user_message": "hi"}, turn="", sleep=clock.sleep)
    assert bad_turn == refusal_result(
        "invalid_input", "turn must be a non-empty string of at most 200 characters, got ''"
    )
    assert clock.slept == []


def test_the_kill_switch_and_the_rate_limit() -> None:
    clock = FakeClock()
    off = pause(make(clock, enabled=False), {"seconds": 1, "user_message": "hi"}, sleep=clock.sleep)
    assert off["refused"] == "disabled"

    policy = make(clock, rate_limit_per_user_per_minute=1)
    assert "refused" not in pause(policy, {"seconds": 1, "user_message": "a"}, sleep=clock.sleep)
    limited = pause(policy, {"seconds": 1, "user_message": "b"}, sleep=clock.sleep)
    assert limited["refused"] == "rate_limited"
    assert limited["retry_after_seconds"] == 59
    # Another user has a rate of its own; None is the anonymous user.
    assert "refused" not in pause(
        policy, {"seconds": 1, "user_message": "c"}, user="u-2", sleep=clock.sleep
    )


async def test_a_cancelled_async_wait_hands_back_what_it_did_not_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    policy = make(clock, max_seconds_per_turn=100)
    started = asyncio.Event()

    async def slow(seconds: float) -> None:
        clock.now += 4  # four seconds pass, then the task is cancelled mid-wait
        started.set()
        await asyncio.sleep(3600)

    task = asyncio.create_task(
        apause(policy, {"seconds": 60, "user_message": "hi"}, turn="t", sleep=slow)
    )
    await started.wait()
    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert "outcome=cancelled" in caplog.text
    assert "waited=4.000" in caplog.text

    async def instant(seconds: float) -> None:
        clock.now += seconds

    # 100 - 4 seconds are left: the cancelled wait charged only what it waited.
    after = await apause(policy, {"seconds": 200, "user_message": "hi"}, turn="t", sleep=instant)
    assert after["granted_seconds"] == 96
    assert after["clipped_by"] == "per_turn"


def test_heartbeats_on_the_interval_grid_then_the_result() -> None:
    clock = FakeClock()
    policy = make(clock, heartbeat_interval_ms=1000)
    beats: list[PauseHeartbeat] = []
    result = pause(
        policy,
        {"seconds": 3, "user_message": "Waiting for the export."},
        sleep=clock.sleep,
        heartbeat=beats.append,
    )
    assert result["waited_seconds"] == 3
    assert clock.slept == [1, 1, 1]
    assert [(b.progress, b.remaining_seconds, b.total) for b in beats] == [
        (0, 3, 3),
        (1, 2, 3),
        (2, 1, 3),
    ]
    assert {b.message for b in beats} == {"Waiting for the export."}
    assert beats[0].as_event() == {
        "type": HEARTBEAT_TYPE,
        "message": "Waiting for the export.",
        "progress": 0,
        "total": 3,
        "remaining_seconds": 3,
        "wait_until": beats[0].wait_until,
    }


def test_a_slow_heartbeat_skips_a_beat_instead_of_drifting() -> None:
    clock = FakeClock()
    policy = make(clock, heartbeat_interval_ms=1000)
    progress: list[float] = []

    def slow(beat: PauseHeartbeat) -> None:
        progress.append(beat.progress)
        clock.now += 1.5 if beat.progress == 0 else 0  # the first send takes 1.5 s

    pause(policy, {"seconds": 4, "user_message": "hi"}, sleep=clock.sleep, heartbeat=slow)
    assert progress == [0, 2, 3]
    assert clock.slept == [0.5, 1, 1]


def test_a_failing_heartbeat_is_reported_and_the_wait_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    policy = make(clock, heartbeat_interval_ms=1000)

    def broken(beat: PauseHeartbeat) -> None:
        raise ConnectionError("the stream is gone")

    with caplog.at_level(logging.INFO, logger="agent_wait.pause"):
        result = pause(
            policy, {"seconds": 5, "user_message": "hi"}, sleep=clock.sleep, heartbeat=broken
        )
    assert result["waited_seconds"] == 5
    assert clock.slept == [5]  # no more beats: the rest in one sleep
    assert "a heartbeat failed; the wait goes on without heartbeats" in caplog.text
    assert "outcome=completed" in caplog.text


def test_a_sleep_returning_true_ends_a_beating_wait_early() -> None:
    clock = FakeClock()
    policy = make(clock, heartbeat_interval_ms=1000)
    beats: list[PauseHeartbeat] = []

    def interrupted(seconds: float) -> bool:
        clock.sleep(seconds)
        return len(clock.slept) == 2  # the second interval is cut short (Event.wait -> True)

    result = pause(
        policy, {"seconds": 10, "user_message": "hi"}, sleep=interrupted, heartbeat=beats.append
    )
    assert result["waited_seconds"] == 2
    assert len(beats) == 2


async def test_async_heartbeats_may_be_awaited() -> None:
    clock = FakeClock()
    policy = make(clock, heartbeat_interval_ms=500)
    beats: list[float] = []

    async def send(beat: PauseHeartbeat) -> None:
        await asyncio.sleep(0)
        beats.append(beat.progress)

    result = await apause(
        policy, {"seconds": 2, "user_message": "hi"}, sleep=clock.asleep, heartbeat=send
    )
    assert result["waited_seconds"] == 2
    assert beats == [0, 0.5, 1, 1.5]


async def test_a_grant_admitted_by_its_host_waits_on_the_same_schedule(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    policy = make(clock, heartbeat_interval_ms=1000)
    request = PauseRequest.from_arguments({"seconds": 3, "user_message": "hi", "reason": "r"})
    grant = policy.admit(request, user="u-1")
    host_log = logging.getLogger("host.pause")
    sent: list[float] = []

    async def asleep(seconds: float) -> None:
        clock.sleep(seconds)

    async def flaky(beat: PauseHeartbeat) -> None:
        sent.append(beat.progress)
        if beat.progress >= 1:
            raise ConnectionError("the client went away")

    with caplog.at_level(logging.INFO, logger="host.pause"):
        result = await await_grant(
            policy, request, grant, sleep=asleep, heartbeat=flaky, log=host_log
        )
    assert result["waited_seconds"] == 3
    assert sent == [0, 1]  # the failed beat is the last one sent
    assert clock.slept == [1, 2]
    lines = [(r.name, r.getMessage()) for r in caplog.records]
    assert (
        "host.pause",
        "agent_wait: a heartbeat failed; the wait goes on without heartbeats",
    ) in lines
    assert any(
        name == "host.pause" and "outcome=completed user='u-1'" in text for name, text in lines
    )
