"""Unit tests of the pause policy, driven by a fake clock (nothing sleeps)."""

from __future__ import annotations

import pytest

from agent_wait.core import ConfigError
from agent_wait.mcp import (
    InvalidPauseRequest,
    PauseConfigError,
    PauseLimits,
    PausePolicy,
    PauseRefused,
    PauseRequest,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def policy(clock: FakeClock, **limits: int | bool) -> PausePolicy:
    return PausePolicy(PauseLimits(**limits), clock=clock)  # type: ignore[arg-type]


def req(seconds: int = 1) -> PauseRequest:
    return PauseRequest(seconds, "Waiting for the queue to drain.")


def refused(p: PausePolicy, request: PauseRequest, **where: str | None) -> PauseRefused:
    with pytest.raises(PauseRefused) as info:
        p.admit(request, user=where.pop("user", None) or "u1", **where)
    return info.value


# --- limits --------------------------------------------------------------------------------


def test_defaults_are_the_specification_defaults() -> None:
    assert PauseLimits.from_env({}) == PauseLimits(
        enabled=True,
        max_seconds_per_call=7200,
        max_seconds_per_turn=14400,
        max_calls_per_turn=5,
        heartbeat_interval_ms=1000,
        rate_limit_per_user_per_minute=30,
        turn_timeout_ms=14_400_000,
    )


def test_from_env_reads_every_variable() -> None:
    limits = PauseLimits.from_env(
        {
            "AGENT_WAIT_ENABLED": "False",
            "AGENT_WAIT_MAX_SECONDS_PER_CALL": "60",
            "AGENT_WAIT_MAX_SECONDS_PER_TURN": " 120 ",
            "AGENT_WAIT_MAX_CALLS_PER_TURN": "2",
            "AGENT_WAIT_HEARTBEAT_INTERVAL_MS": "250",
            "AGENT_WAIT_RATE_LIMIT_PER_USER_PER_MINUTE": "7",
            "CHAT_AGENT_TURN_TIMEOUT_MS": "90000",
        }
    )
    assert limits == PauseLimits(False, 60, 120, 2, 250, 7, 90_000)
    assert limits.heartbeat_interval == 0.25
    assert limits.turn_timeout == 90.0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("yes", True), ("ON", True), ("true", True), ("0", False), ("off", False)],
)
def test_kill_switch_spellings(raw: str, expected: bool) -> None:
    assert PauseLimits.from_env({"AGENT_WAIT_ENABLED": raw}).enabled is expected


@pytest.mark.parametrize(
    ("var", "raw"),
    [
        ("AGENT_WAIT_ENABLED", "maybe"),
        ("AGENT_WAIT_ENABLED", ""),
        ("AGENT_WAIT_MAX_SECONDS_PER_CALL", "abc"),
        ("AGENT_WAIT_MAX_SECONDS_PER_CALL", "-5"),
        ("AGENT_WAIT_MAX_SECONDS_PER_CALL", "1.5"),
        ("AGENT_WAIT_MAX_SECONDS_PER_CALL", ""),
        ("AGENT_WAIT_MAX_SECONDS_PER_TURN", "0"),
        ("AGENT_WAIT_MAX_CALLS_PER_TURN", "0"),
        ("AGENT_WAIT_HEARTBEAT_INTERVAL_MS", "5"),
        ("AGENT_WAIT_RATE_LIMIT_PER_USER_PER_MINUTE", "1e3"),
        ("CHAT_AGENT_TURN_TIMEOUT_MS", "999"),
        ("CHAT_AGENT_TURN_TIMEOUT_MS", "99999999999999999999"),
    ],
)
def test_invalid_env_value_names_variable_and_value(var: str, raw: str) -> None:
    with pytest.raises(PauseConfigError) as info:
        PauseLimits.from_env({var: raw})
    assert var in str(info.value)
    assert repr(raw) in str(info.value)
    assert isinstance(info.value, ConfigError)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_seconds_per_call", 0),
        ("max_calls_per_turn", True),
        ("heartbeat_interval_ms", 1.5),
        ("enabled", "yes"),
    ],
)
def test_limits_validate_fields(field: str, value: object) -> None:
    with pytest.raises(PauseConfigError, match=field):
        PauseLimits(**{field: value})  # type: ignore[arg-type]


# --- requests ------------------------------------------------------------------------------


def test_request_from_arguments() -> None:
    assert PauseRequest.from_arguments(
        {"seconds": 5.0, "user_message": "Waiting.", "reason": "rate limit", "extra": 1}
    ) == PauseRequest(5, "Waiting.", "rate limit")


@pytest.mark.parametrize(
    ("arguments", "field", "fragment"),
    [
        ({"user_message": "m"}, "seconds", "seconds is required"),
        ({"seconds": 0, "user_message": "m"}, "seconds", "got 0"),
        ({"seconds": -3, "user_message": "m"}, "seconds", "got -3"),
        ({"seconds": 1.5, "user_message": "m"}, "seconds", "got 1.5"),
        ({"seconds": "5", "user_message": "m"}, "seconds", "got '5'"),
        ({"seconds": True, "user_message": "m"}, "seconds", "got True"),
        ({"seconds": None, "user_message": "m"}, "seconds", "got None"),
        ({"seconds": 5}, "user_message", "user_message is required"),
        ({"seconds": 5, "user_message": "  "}, "user_message", "must not be empty"),
        ({"seconds": 5, "user_message": 7}, "user_message", "got int 7"),
        ({"seconds": 5, "user_message": "x" * 1001}, "user_message", "1001 characters"),
        ({"seconds": 5, "user_message": "m", "reason": ["a"]}, "reason", "got list"),
        (None, "seconds", "seconds is required"),
        ({"seconds": 10**9 + 1, "user_message": "m"}, "seconds", "got 1000000001"),
        ({"seconds": 10**5000, "user_message": "m"}, "seconds", "got a 5001-digit number"),
        ({"seconds": -(10**5000), "user_message": "m"}, "seconds", "got a 5001-digit number"),
        ({"seconds": 1e300, "user_message": "m"}, "seconds", "got a 301-digit number"),
        ({"seconds": float("inf"), "user_message": "m"}, "seconds", "got inf"),
        ({"seconds": float("nan"), "user_message": "m"}, "seconds", "got nan"),
    ],
)
def test_invalid_request_names_field(
    arguments: dict[str, object] | None, field: str, fragment: str
) -> None:
    with pytest.raises(InvalidPauseRequest) as info:
        PauseRequest.from_arguments(arguments)
    assert info.value.field == field
    assert fragment in str(info.value)


# --- caps ----------------------------------------------------------------------------------


def test_grant_within_caps_is_not_clipped() -> None:
    clock = FakeClock()
    grant = policy(clock).admit(req(30), user="u1", turn="t1")
    assert (grant.requested_seconds, grant.granted_seconds) == (30, 30)
    assert grant.clipped_by is None
    assert grant.cap_seconds is None
    assert grant.turn_seconds_remaining == 14400 - 30
    assert grant.turn_calls_remaining == 4


def test_per_call_cap_clips() -> None:
    grant = policy(FakeClock(), max_seconds_per_call=60).admit(req(600), user="u1", turn="t1")
    assert grant.granted_seconds == 60
    assert grant.clipped_by == "per_call"
    assert grant.cap_seconds == 60


def test_per_turn_budget_clips_then_refuses() -> None:
    clock = FakeClock()
    p = policy(clock, max_seconds_per_call=100, max_seconds_per_turn=150)
    first = p.admit(req(100), user="u1", turn="t1")
    clock.advance(100)
    p.finish(first, 100)
    second = p.admit(req(100), user="u1", turn="t1")
    assert (second.granted_seconds, second.clipped_by) == (50, "per_turn")
    assert second.turn_seconds_remaining == 0
    clock.advance(50)
    p.finish(second, 50)
    error = refused(p, req(1), turn="t1")
    assert error.code == "turn_budget_exhausted"
    assert "AGENT_WAIT_MAX_SECONDS_PER_TURN" in str(error)
    # Another turn of the same user has its own budget.
    assert p.admit(req(100), user="u1", turn="t2").granted_seconds == 100


def test_concurrent_waits_reserve_budget_at_admission() -> None:
    p = policy(FakeClock(), max_seconds_per_turn=10)
    assert p.admit(req(8), user="u1", turn="t1").granted_seconds == 8
    # The first wait is still running: its seconds are already charged.
    assert p.admit(req(8), user="u1", turn="t1").granted_seconds == 2


def test_calls_per_turn_refused() -> None:
    p = policy(FakeClock(), max_calls_per_turn=2)
    assert p.admit(req(), user="u1", turn="t1").turn_calls_remaining == 1
    assert p.admit(req(), user="u1", turn="t1").turn_calls_remaining == 0
    error = refused(p, req(), turn="t1")
    assert error.code == "calls_per_turn"
    assert "AGENT_WAIT_MAX_CALLS_PER_TURN=2" in str(error)
    assert p.admit(req(), user="u2", turn="t1").turn_calls_remaining == 1


def test_turn_wall_clock_clips_then_refuses() -> None:
    clock = FakeClock()
    p = policy(clock, turn_timeout_ms=100_000, max_seconds_per_turn=1000, max_seconds_per_call=1000)
    first = p.admit(req(10), user="u1", turn="t1")
    clock.advance(90.5)
    p.finish(first, 10)
    second = p.admit(req(60), user="u1", turn="t1")
    assert (second.granted_seconds, second.clipped_by) == (9, "turn_timeout")
    clock.advance(9.2)
    p.finish(second, 9)
    error = refused(p, req(1), turn="t1")
    assert error.code == "turn_timeout"
    assert "CHAT_AGENT_TURN_TIMEOUT_MS=100000" in str(error)


def test_smallest_cap_wins() -> None:
    clock = FakeClock()
    p = policy(clock, max_seconds_per_call=30, max_seconds_per_turn=20, turn_timeout_ms=15_000)
    grant = p.admit(req(60), user="u1", turn="t1")
    assert (grant.granted_seconds, grant.clipped_by) == (15, "turn_timeout")


def test_explicit_turn_refused_after_its_wall_clock_then_forgotten() -> None:
    clock = FakeClock()
    p = policy(clock, turn_timeout_ms=60_000, max_calls_per_turn=1)
    p.finish(p.admit(req(), user="u1", turn="t1"), 1)
    clock.advance(61)
    assert refused(p, req(), turn="t1").code == "calls_per_turn"
    clock.advance(60)  # two turn timeouts after the turn started: the id is forgotten
    assert p.admit(req(), user="u1", turn="t1").turn_calls_remaining == 0


def test_implicit_turn_rolls_over_after_turn_timeout() -> None:
    clock = FakeClock()
    p = policy(clock, turn_timeout_ms=60_000, max_calls_per_turn=2)
    p.admit(req(), user="u1")
    clock.advance(30)
    assert p.admit(req(), user="u1").turn_calls_remaining == 0
    assert refused(p, req()).code == "calls_per_turn"
    clock.advance(30)
    assert p.admit(req(), user="u1").turn_calls_remaining == 1


def test_rate_limit_per_user_over_a_rolling_minute() -> None:
    clock = FakeClock()
    p = policy(clock, rate_limit_per_user_per_minute=2)
    p.admit(req(), user="u1", turn="a")
    clock.advance(20)
    p.admit(req(), user="u1", turn="b")
    clock.advance(10)
    error = refused(p, req(), turn="c")
    assert error.code == "rate_limited"
    assert error.retry_after_seconds == pytest.approx(30)
    assert "Retry in 30 s" in str(error)
    p.admit(req(), user="u2", turn="c")  # other users are not affected
    clock.advance(30)  # the first wait left the window
    p.admit(req(), user="u1", turn="c")
    assert refused(p, req(), turn="d").retry_after_seconds == pytest.approx(20)


def test_refused_calls_do_not_count() -> None:
    p = policy(FakeClock(), rate_limit_per_user_per_minute=2, max_calls_per_turn=1)
    p.admit(req(), user="u1", turn="a")
    assert refused(p, req(), turn="a").code == "calls_per_turn"
    assert refused(p, req(), turn="a").code == "calls_per_turn"
    p.admit(req(), user="u1", turn="b")  # the second admitted wait, not the fourth attempt


def test_kill_switch_refuses_everything() -> None:
    error = refused(policy(FakeClock(), enabled=False), req())
    assert error.code == "disabled"
    assert "AGENT_WAIT_ENABLED=false" in str(error)


# --- settling ------------------------------------------------------------------------------


def test_cancelled_wait_refunds_the_unwaited_part() -> None:
    clock = FakeClock()
    p = policy(clock, max_seconds_per_turn=10, max_seconds_per_call=10)
    grant = p.admit(req(10), user="u1", turn="t1")
    clock.advance(2.5)
    p.finish(grant, 2.5)
    p.finish(grant, 0)  # a second finish changes nothing
    again = p.admit(req(10), user="u1", turn="t1")
    assert (again.granted_seconds, again.clipped_by) == (7, "per_turn")  # floor(10 - 2.5)
    assert again.turn_calls_remaining == 3  # the cancelled call still counted


def test_finish_never_charges_more_than_granted() -> None:
    p = policy(FakeClock(), max_seconds_per_turn=10)
    p.finish(p.admit(req(4), user="u1", turn="t1"), 9.0)
    assert p.admit(req(10), user="u1", turn="t1").granted_seconds == 6


@pytest.mark.parametrize("waited", [float("nan"), float("inf"), float("-inf")])
def test_finish_refuses_a_non_finite_wait_and_keeps_the_grant_open(waited: float) -> None:
    p = policy(FakeClock(), max_seconds_per_turn=10)
    grant = p.admit(req(4), user="u1", turn="t1")
    with pytest.raises(
        ValueError, match=f"waited_seconds must be a finite number of seconds, got {waited}"
    ):
        p.finish(grant, waited)
    p.finish(grant, 1.0)  # the grant is still open and settles normally
    assert p.admit(req(10), user="u1", turn="t1").granted_seconds == 9


@pytest.mark.parametrize("waited", ["1", None, True, [1]])
def test_finish_refuses_a_non_number(waited: object) -> None:
    p = policy(FakeClock())
    grant = p.admit(req(4), user="u1", turn="t1")
    with pytest.raises(TypeError, match="waited_seconds must be a number of seconds, got"):
        p.finish(grant, waited)  # type: ignore[arg-type]


def test_idle_state_is_forgotten() -> None:
    clock = FakeClock()
    p = policy(clock, turn_timeout_ms=60_000)
    for user in ("u1", "u2", "u3"):
        p.finish(p.admit(req(), user=user, turn="t"), 1)
    clock.advance(121)
    p.admit(req(), user="u4", turn="t")
    assert set(p._starts) == {"u4"}  # pyright: ignore[reportPrivateUsage]
    assert set(p._turns) == {("u4", "t")}  # pyright: ignore[reportPrivateUsage]
