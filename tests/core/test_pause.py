"""pause / apause: one agent_wait call end to end on the shared policy, with a fake clock."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent_wait.core.pause import (
    PauseLimits,
    PausePolicy,
    apause,
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
