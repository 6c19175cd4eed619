"""The ``agent_wait`` pause: caps, budgets, rate limits and one bounded wait, for any host.

The MCP server (agent-wait-mcp) and the framework-native pause tools (LangChain/LangGraph,
Pydantic AI, Strands) share this policy, its tool description, its results and its audit log.
Nothing here imports a transport or a framework; the unit tests drive it with a fake clock.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import math
import os
import re
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from agent_wait.core._models import format_utc
from agent_wait.pause._errors import (
    InvalidPauseRequest,
    PauseConfigError,
    PauseRefused,
)

ClipCause = Literal["per_call", "per_turn", "turn_timeout"]
"""Which cap shortened a granted wait."""

MAX_TEXT_LENGTH = 1000
"""Longest ``user_message`` / ``reason`` accepted (both travel in every heartbeat or log line)."""

_RATE_WINDOW_SECONDS = 60.0
# Bounds every integer setting so deadlines stay finite floats (1e9 s is ~31 years).
_MAX_SETTING = 1_000_000_000
MAX_REQUEST_SECONDS = _MAX_SETTING
"""Largest ``seconds`` accepted: no cap can be higher, so nothing larger could be granted."""
# Below 10 ms a heartbeat floods the client without telling the user anything new.
_MIN_HEARTBEAT_MS = 10
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class PauseLimits:
    """Deployment caps of the pause, with the defaults of the agent-wait tool specification.

    Build it from the environment with :meth:`from_env`; every field maps to one variable.

    Attributes:
        enabled: Kill switch (``AGENT_WAIT_ENABLED``).
        max_seconds_per_call: Longest single wait (``AGENT_WAIT_MAX_SECONDS_PER_CALL``).
        max_seconds_per_turn: Total wait per turn (``AGENT_WAIT_MAX_SECONDS_PER_TURN``).
        max_calls_per_turn: Waits per turn (``AGENT_WAIT_MAX_CALLS_PER_TURN``).
        heartbeat_interval_ms: Progress interval (``AGENT_WAIT_HEARTBEAT_INTERVAL_MS``).
        rate_limit_per_user_per_minute: Waits a user may start in any rolling 60 s
            (``AGENT_WAIT_RATE_LIMIT_PER_USER_PER_MINUTE``).
        turn_timeout_ms: The turn's wall clock, the parent budget no wait may outlive
            (``CHAT_AGENT_TURN_TIMEOUT_MS``).
    """

    enabled: bool = True
    max_seconds_per_call: int = 7200
    max_seconds_per_turn: int = 14400
    max_calls_per_turn: int = 5
    heartbeat_interval_ms: int = 1000
    rate_limit_per_user_per_minute: int = 30
    turn_timeout_ms: int = 14_400_000

    def __post_init__(self) -> None:
        # Dataclasses do not check annotations, and bool is an int subclass.
        if not isinstance(self.enabled, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise PauseConfigError(f"enabled must be a bool, got {self.enabled!r}")
        for name, (_, minimum) in _INT_SETTINGS.items():
            value: object = getattr(self, name)
            if (
                not isinstance(value, int)
                or isinstance(value, bool)
                or not minimum <= value <= _MAX_SETTING
            ):
                raise PauseConfigError(
                    f"{name} must be a whole number from {minimum} to {_MAX_SETTING}, got {value!r}"
                )

    @property
    def heartbeat_interval(self) -> float:
        """The heartbeat interval in seconds."""
        return self.heartbeat_interval_ms / 1000

    @property
    def turn_timeout(self) -> float:
        """The turn wall clock in seconds."""
        return self.turn_timeout_ms / 1000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PauseLimits:
        """Read the limits from environment variables; unset variables keep their default.

        Args:
            environ: The environment to read; ``os.environ`` when omitted.

        Returns:
            The validated limits.

        Raises:
            PauseConfigError: A variable is set to an invalid value (empty included); the
                message names the variable and the value.
        """
        env = os.environ if environ is None else environ
        values: dict[str, bool | int] = {}
        raw = env.get(_ENABLED_VAR)
        if raw is not None:
            flag = raw.strip().lower()
            if flag not in _TRUE | _FALSE:
                raise PauseConfigError(
                    f"{_ENABLED_VAR}={raw!r} is not valid: expected true/false "
                    "(also accepted: 1/0, yes/no, on/off)"
                )
            values["enabled"] = flag in _TRUE
        for name, (var, minimum) in _INT_SETTINGS.items():
            raw = env.get(var)
            if raw is None:
                continue
            text = raw.strip()
            if not _DIGITS.fullmatch(text) or not minimum <= int(text) <= _MAX_SETTING:
                raise PauseConfigError(
                    f"{var}={raw!r} is not valid: expected a whole number from {minimum} "
                    f"to {_MAX_SETTING}"
                )
            values[name] = int(text)
        return cls(**values)  # pyright: ignore[reportArgumentType]


_ENABLED_VAR = "AGENT_WAIT_ENABLED"
# field -> (environment variable, smallest valid value)
_INT_SETTINGS: dict[str, tuple[str, int]] = {
    "max_seconds_per_call": ("AGENT_WAIT_MAX_SECONDS_PER_CALL", 1),
    "max_seconds_per_turn": ("AGENT_WAIT_MAX_SECONDS_PER_TURN", 1),
    "max_calls_per_turn": ("AGENT_WAIT_MAX_CALLS_PER_TURN", 1),
    "heartbeat_interval_ms": ("AGENT_WAIT_HEARTBEAT_INTERVAL_MS", _MIN_HEARTBEAT_MS),
    "rate_limit_per_user_per_minute": ("AGENT_WAIT_RATE_LIMIT_PER_USER_PER_MINUTE", 1),
    "turn_timeout_ms": ("CHAT_AGENT_TURN_TIMEOUT_MS", 1000),
}


@dataclass(frozen=True, slots=True)
class PauseRequest:
    """A validated request to pause.

    Attributes:
        seconds: Requested wait, a whole number of seconds, 1 or more (the policy may clip it).
        user_message: Plain-language status shown to the user while waiting.
        reason: Optional internal note, written to the audit log only.
    """

    seconds: int
    user_message: str
    reason: str | None = None

    def __post_init__(self) -> None:
        seconds = self.seconds
        # As in PauseLimits: the annotation is not enforced at runtime.
        if not isinstance(seconds, int) or isinstance(seconds, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidPauseRequest(
                "seconds",
                f"seconds must be a whole number of seconds, 1 or more; got {_show(seconds)}",
            )
        # Refused before anything is charged: it keeps audit lines and results printable
        # (Python refuses to print an int of more than 4300 digits).
        if not 1 <= seconds <= MAX_REQUEST_SECONDS:
            raise InvalidPauseRequest(
                "seconds",
                f"seconds must be a whole number from 1 to {MAX_REQUEST_SECONDS}, "
                f"got {_show(seconds)}",
            )
        _check_text("user_message", self.user_message, required=True)
        _check_text("reason", self.reason, required=False)

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, object] | None) -> PauseRequest:
        """Validate tool-call arguments (``seconds``, ``user_message``, optional ``reason``).

        A JSON number with a zero fraction (``5.0``) counts as the integer it equals, as JSON
        Schema's ``integer`` does; strings and booleans are refused. Other keys are ignored.

        Args:
            arguments: The decoded arguments of the call.

        Returns:
            The request.

        Raises:
            InvalidPauseRequest: A field is missing or invalid; the message names it and the value.
        """
        args = arguments or {}
        if "seconds" not in args:
            raise InvalidPauseRequest(
                "seconds", "seconds is required: a whole number of seconds to wait, 1 or more"
            )
        seconds = args["seconds"]
        if isinstance(seconds, float) and seconds.is_integer():
            seconds = int(seconds)
        if "user_message" not in args:
            raise InvalidPauseRequest(
                "user_message",
                "user_message is required: a short present-tense status shown to the user "
                "while waiting",
            )
        return cls(
            seconds=seconds,  # pyright: ignore[reportArgumentType]  # checked in __post_init__
            user_message=args["user_message"],  # pyright: ignore[reportArgumentType]
            reason=args.get("reason"),  # pyright: ignore[reportArgumentType]
        )


def _show(value: object) -> str:
    """A short rendering of a rejected value: huge numbers by their size, long reprs cut."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1
        if abs(value) < 10 ** (digits - 1):  # the estimate can be one too high
            digits -= 1
        return f"a {digits}-digit number"
    shown = repr(value)
    return shown if len(shown) <= 64 else shown[:64] + "..."


def _check_text(field: str, value: object, *, required: bool) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str):
        raise InvalidPauseRequest(
            field, f"{field} must be a string, got {type(value).__name__} {value!r}"
        )
    if required and not value.strip():
        raise InvalidPauseRequest(
            field, f"{field} must not be empty: say what the user is waiting for"
        )
    if len(value) > MAX_TEXT_LENGTH:
        raise InvalidPauseRequest(
            field,
            f"{field} is {len(value)} characters long; keep it to {MAX_TEXT_LENGTH} or fewer",
        )


@dataclass(frozen=True, slots=True)
class PauseGrant:
    """An admitted wait: how long to sleep, and what the turn has left afterwards.

    Attributes:
        grant_id: Identifies the grant for :meth:`PausePolicy.finish`.
        user: The user key the wait is charged to.
        turn: The explicit turn id, or ``None`` for the user's implicit turn.
        requested_seconds: What the caller asked for.
        granted_seconds: What the caller may wait (at most ``requested_seconds``).
        clipped_by: The cap that shortened the wait, or ``None``.
        turn_seconds_remaining: Wait budget the turn has left once this wait is charged.
        turn_calls_remaining: Waits the turn may still start.
    """

    grant_id: int
    user: str
    turn: str | None
    requested_seconds: int
    granted_seconds: int
    clipped_by: ClipCause | None
    turn_seconds_remaining: int
    turn_calls_remaining: int

    @property
    def cap_seconds(self) -> int | None:
        """The effective cap when the request was clipped, else ``None``."""
        return self.granted_seconds if self.clipped_by is not None else None


@dataclass(slots=True)
class _Turn:
    started: float
    calls: int = 0
    # Seconds granted in this turn minus what cancelled waits handed back.
    charged: float = 0.0


class PausePolicy:
    """Admits, clips or refuses waits and keeps per-turn budgets and per-user rate counters.

    State lives in this object (one per server process): the rate limit is not a cluster-wide
    quota. Thread-safe, so synchronous framework tools may share one instance.

    A *turn* is keyed by ``(user, turn)``. An explicit turn id starts its wall clock when the
    policy first sees it and is forgotten ``2 * turn_timeout`` later. Without a turn id each
    user has one implicit turn, which starts at its first wait and is replaced by a fresh one
    once its wall clock (``turn_timeout``) has run out.

    Args:
        limits: The caps; the specification defaults when omitted.
        clock: Monotonic seconds; inject a fake in tests.
    """

    def __init__(
        self, limits: PauseLimits | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits if limits is not None else PauseLimits()
        self._clock = clock
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._turns: dict[tuple[str, str | None], _Turn] = {}
        self._starts: dict[str, deque[float]] = {}
        self._open: dict[int, _Turn] = {}
        self._last_sweep = clock()

    def admit(self, request: PauseRequest, *, user: str, turn: str | None = None) -> PauseGrant:
        """Admit a wait, clipped to the caps, and charge it to the turn and the user.

        Checks run in this order: kill switch, user rate, calls per turn, turn wall clock,
        turn wait budget; then the grant is clipped to the per-call cap, the turn budget and
        the turn wall clock (whole seconds, rounded down).

        Args:
            request: The validated request.
            user: Who the wait is charged to (rate limit key).
            turn: The turn id, or ``None`` for the user's implicit turn.

        Returns:
            The grant; pass it to :meth:`finish` when the wait ends, however it ends.

        Raises:
            PauseRefused: A rule refused the wait; nothing was charged.
        """
        limits = self.limits
        if not limits.enabled:
            raise PauseRefused(
                "disabled",
                "agent_wait is disabled on this server (AGENT_WAIT_ENABLED=false). Do not retry; "
                "continue without pausing, or tell the user you cannot wait here.",
            )
        with self._lock:
            now = self._clock()
            self._sweep(now)
            starts = self._starts.setdefault(user, deque())
            while starts and starts[0] <= now - _RATE_WINDOW_SECONDS:
                starts.popleft()
            if len(starts) >= limits.rate_limit_per_user_per_minute:
                retry = starts[0] + _RATE_WINDOW_SECONDS - now
                raise PauseRefused(
                    "rate_limited",
                    f"agent_wait refused: this user already started {len(starts)} waits in the "
                    f"last 60 s (AGENT_WAIT_RATE_LIMIT_PER_USER_PER_MINUTE="
                    f"{limits.rate_limit_per_user_per_minute}). Retry in {math.ceil(retry)} s at "
                    "the earliest, or continue without waiting.",
                    retry_after_seconds=retry,
                )
            state = self._turn(user, turn, now)
            if state.calls >= limits.max_calls_per_turn:
                raise PauseRefused(
                    "calls_per_turn",
                    f"agent_wait refused: this turn already made {state.calls} agent_wait calls, "
                    f"the most allowed (AGENT_WAIT_MAX_CALLS_PER_TURN="
                    f"{limits.max_calls_per_turn}). Continue with other tools or answer the "
                    "user now.",
                )
            wall_left = math.floor(state.started + limits.turn_timeout - now)
            if wall_left < 1:
                raise PauseRefused(
                    "turn_timeout",
                    f"agent_wait refused: less than 1 s is left of this turn's "
                    f"{limits.turn_timeout:g} s wall clock (CHAT_AGENT_TURN_TIMEOUT_MS="
                    f"{limits.turn_timeout_ms}). Answer the user now.",
                )
            budget_left = math.floor(limits.max_seconds_per_turn - state.charged)
            if budget_left < 1:
                raise PauseRefused(
                    "turn_budget_exhausted",
                    f"agent_wait refused: this turn already used its {limits.max_seconds_per_turn}"
                    f" s wait budget (AGENT_WAIT_MAX_SECONDS_PER_TURN). Continue with other "
                    "tools or answer the user now.",
                )
            granted, clipped_by = request.seconds, None
            caps: tuple[tuple[ClipCause, int], ...] = (
                ("per_call", limits.max_seconds_per_call),
                ("per_turn", budget_left),
                ("turn_timeout", wall_left),
            )
            for cause, cap in caps:
                if cap < granted:
                    granted, clipped_by = cap, cause
            state.calls += 1
            state.charged += granted
            starts.append(now)
            grant_id = next(self._ids)
            self._open[grant_id] = state
            return PauseGrant(
                grant_id=grant_id,
                user=user,
                turn=turn,
                requested_seconds=request.seconds,
                granted_seconds=granted,
                clipped_by=clipped_by,
                turn_seconds_remaining=budget_left - granted,
                turn_calls_remaining=limits.max_calls_per_turn - state.calls,
            )

    def now(self) -> float:
        """The policy's clock (monotonic seconds): what a wait is measured with."""
        return self._clock()

    def finish(self, grant: PauseGrant, waited_seconds: float) -> None:
        """Settle a grant: the part of it not waited (a cancelled wait) goes back to the turn.

        The call still counts toward the turn's calls and the user's rate. Finishing a grant
        twice is a no-op.

        Args:
            grant: What :meth:`admit` returned.
            waited_seconds: How long the caller actually waited (negative counts as 0, more
                than granted as the grant).

        Raises:
            TypeError: ``waited_seconds`` is not a number.
            ValueError: ``waited_seconds`` is NaN or infinite; the grant stays open.
        """
        if not isinstance(waited_seconds, int | float) or isinstance(waited_seconds, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"waited_seconds must be a number of seconds, got "
                f"{type(waited_seconds).__name__} {_show(waited_seconds)}"
            )
        # A NaN would poison the turn's budget and break every later call of the turn.
        if isinstance(waited_seconds, float) and not math.isfinite(waited_seconds):
            raise ValueError(
                f"waited_seconds must be a finite number of seconds, got {waited_seconds!r}"
            )
        with self._lock:
            state = self._open.pop(grant.grant_id, None)
            if state is not None:
                used = min(max(waited_seconds, 0.0), float(grant.granted_seconds))
                state.charged -= grant.granted_seconds - used

    def _turn(self, user: str, turn: str | None, now: float) -> _Turn:
        key = (user, turn)
        state = self._turns.get(key)
        if state is None or (turn is None and now >= state.started + self.limits.turn_timeout):
            state = self._turns[key] = _Turn(started=now)
        return state

    def _sweep(self, now: float) -> None:
        # Bounds memory without a timer: at most once a minute, forget idle rate windows and
        # turns whose wall clock ran out long ago (open grants keep their own reference).
        if now - self._last_sweep < _RATE_WINDOW_SECONDS:
            return
        self._last_sweep = now
        for user in [
            u for u, s in self._starts.items() if not s or s[-1] <= now - _RATE_WINDOW_SECONDS
        ]:
            del self._starts[user]
        horizon = 2 * self.limits.turn_timeout
        for key in [k for k, t in self._turns.items() if now >= t.started + horizon]:
            del self._turns[key]


TOOL_NAME = "agent_wait"
"""The pause tool's name, in MCP and in every framework."""

ANONYMOUS_USER = "anonymous"
"""The user a wait is charged to when the host names none."""

MAX_ID_LENGTH = 200
"""Longest user or turn id a host may name."""

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "seconds": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_REQUEST_SECONDS,
            "description": "Whole seconds to wait; may be shortened by server caps.",
        },
        "user_message": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_TEXT_LENGTH,
            "description": "Plain-language, present-tense status shown to the user while waiting.",
        },
        "reason": {
            "type": "string",
            "maxLength": MAX_TEXT_LENGTH,
            "description": "Optional internal note for the audit log; not shown.",
        },
    },
    "required": ["seconds", "user_message"],
}
"""The JSON Schema of the tool's arguments (``seconds``, ``user_message``, ``reason``)."""


def tool_description(limits: PauseLimits) -> str:
    """The tool description the model reads, with the caps of ``limits``."""
    return (
        "Pause for a bounded number of seconds without ending the turn, showing "
        "`user_message` to the user while waiting, then continue with the next tool. Use it "
        "for short gaps between tool steps (rate limits, queue drain, letting an external "
        f"system catch up). This server grants at most {limits.max_seconds_per_call} s per "
        f"call, {limits.max_seconds_per_turn} s and {limits.max_calls_per_turn} calls per "
        "turn; longer requests are shortened (see `clipped_by`), and calls over a count or "
        "rate limit are refused with an explanation. Do not use it to wait for the user."
    )


def checked_id(field: str, value: object, *, label: str | None = None) -> str | None:
    """A host-supplied user or turn id: None, or a non-empty string of at most 200 characters.

    Args:
        field: The name :class:`InvalidPauseRequest` carries.
        value: The id as the host sent it.
        label: How the message names it (default: ``field``).

    Raises:
        InvalidPauseRequest: Anything else, naming the field and the value.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_LENGTH:
        raise InvalidPauseRequest(
            field,
            f"{label or field} must be a non-empty string of at most {MAX_ID_LENGTH} "
            f"characters, got {value!r}",
        )
    return value


def pause_result(
    grant: PauseGrant, waited_seconds: float, *, now: datetime | None = None
) -> dict[str, Any]:
    """What a finished wait returns to the model (the MCP tool's structured content).

    ``cap_seconds`` and ``clipped_by`` are present only when a cap shortened the wait.
    """
    result: dict[str, Any] = {
        "waited_seconds": round(waited_seconds, 3),
        "resume_at": format_utc(now or datetime.now(UTC)),
        "requested_seconds": grant.requested_seconds,
        "granted_seconds": grant.granted_seconds,
        "turn_seconds_remaining": grant.turn_seconds_remaining,
        "turn_calls_remaining": grant.turn_calls_remaining,
    }
    if grant.clipped_by is not None:
        result["cap_seconds"] = grant.cap_seconds
        result["clipped_by"] = grant.clipped_by
    return result


def refusal_result(
    code: str, message: str, retry_after_seconds: float | None = None
) -> dict[str, Any]:
    """What a refused or invalid call returns to a framework's model.

    ``refused`` (the code), ``message`` (what to do instead) and, when rate limited,
    ``retry_after_seconds``.
    """
    result: dict[str, Any] = {"refused": code, "message": message}
    if retry_after_seconds is not None:
        result["retry_after_seconds"] = math.ceil(retry_after_seconds)
    return result


_audit = logging.getLogger("agent_wait.pause")


def audit_invalid(
    field: str, user: str | None, turn: str | None, log: logging.Logger = _audit
) -> None:
    """The audit line of a call refused as invalid.

    The field name only: the rejected value may be the user-facing message.
    """
    log.info("agent_wait audit outcome=invalid field=%s user=%r turn=%r", field, user, turn)


def audit_refused(
    refused: PauseRefused,
    request: PauseRequest,
    user: str,
    turn: str | None,
    log: logging.Logger = _audit,
) -> None:
    """The audit line of a call the policy refused."""
    log.info(
        "agent_wait audit outcome=refused code=%s user=%r turn=%r requested=%d granted=0 reason=%r",
        refused.code,
        user,
        turn,
        request.seconds,
        request.reason,
    )


def audit_finished(
    outcome: str, grant: PauseGrant, waited: float, reason: str | None, log: logging.Logger = _audit
) -> None:
    """The audit line of an admitted wait, however it ended (completed, cancelled, failed)."""
    log.info(
        "agent_wait audit outcome=%s user=%r turn=%r requested=%d granted=%d clipped_by=%s "
        "waited=%.3f reason=%r",
        outcome,
        grant.user,
        grant.turn,
        grant.requested_seconds,
        grant.granted_seconds,
        grant.clipped_by,
        waited,
        reason,
    )


HEARTBEAT_TYPE = "agent_wait.heartbeat"
"""The ``type`` of a heartbeat as a framework event (:meth:`PauseHeartbeat.as_event`)."""


@dataclass(frozen=True)
class PauseHeartbeat:
    """One progress beat of a wait: what the MCP tool's progress notification carries.

    Attributes:
        message: The call's ``user_message``, verbatim.
        progress: Seconds elapsed (millisecond precision).
        total: Seconds granted, so ``total - progress`` is the time left.
        remaining_seconds: Seconds left, rounded up to the millisecond (never 0 while waiting).
        wait_until: When the wait ends, RFC 3339 UTC (whole seconds).
    """

    message: str
    progress: float
    total: int
    remaining_seconds: float
    wait_until: str

    def as_event(self) -> dict[str, Any]:
        """The beat as a JSON object for a framework's event stream (``type`` first)."""
        return {
            "type": HEARTBEAT_TYPE,
            "message": self.message,
            "progress": self.progress,
            "total": self.total,
            "remaining_seconds": self.remaining_seconds,
            "wait_until": self.wait_until,
        }


Heartbeat = Callable[[PauseHeartbeat], object]
"""Receives each beat of a wait; for :func:`apause` it may return an awaitable (awaited)."""


class _Beats:
    """The heartbeats of one admitted wait, on a fixed grid from its start."""

    def __init__(
        self, policy: PausePolicy, request: PauseRequest, grant: PauseGrant, send: Heartbeat | None
    ) -> None:
        self.send = send
        self.message = request.user_message
        self.total = grant.granted_seconds
        self.interval = policy.limits.heartbeat_interval
        self.start = policy.now()
        self.deadline = self.start + grant.granted_seconds
        self.wait_until = format_utc(datetime.now(UTC) + timedelta(seconds=grant.granted_seconds))

    def beat(self, now: float) -> PauseHeartbeat:
        return PauseHeartbeat(
            message=self.message,
            progress=round(now - self.start, 3),
            total=self.total,
            # Rounded up, so a beat sent while waiting never says 0.
            remaining_seconds=math.ceil((self.deadline - now) * 1000) / 1000,
            wait_until=self.wait_until,
        )

    def until(self, now: float) -> float:
        """The next point to wake at after ``now``: the next beat, or the end once beats stopped."""
        if self.send is None:
            return self.deadline
        # Beats stay on the start + k * interval grid, so a slow send skips a beat instead of
        # drifting or bursting.
        step = math.floor((now - self.start) / self.interval) + 1
        return min(self.start + step * self.interval, self.deadline)

    def failed(self, log: logging.Logger = _audit) -> None:
        # A lost heartbeat must not end the wait it reports on.
        log.warning(
            "agent_wait: a heartbeat failed; the wait goes on without heartbeats", exc_info=True
        )
        self.send = None


def _admitted(
    policy: PausePolicy, arguments: Mapping[str, object] | None, user: object, turn: object
) -> tuple[PauseRequest, PauseGrant] | dict[str, Any]:
    """Check the call and admit it, or the refusal to return (each with its audit line)."""
    shown_user = user if isinstance(user, str) else None
    shown_turn = turn if isinstance(turn, str) else None
    try:
        user_id = checked_id("user", user) or ANONYMOUS_USER
        turn_id = checked_id("turn", turn)
        request = PauseRequest.from_arguments(arguments)
    except InvalidPauseRequest as invalid:
        audit_invalid(invalid.field, shown_user, shown_turn)
        return refusal_result("invalid_input", str(invalid))
    try:
        return request, policy.admit(request, user=user_id, turn=turn_id)
    except PauseRefused as refused:
        audit_refused(refused, request, user_id, turn_id)
        return refusal_result(refused.code, str(refused), refused.retry_after_seconds)


def pause(
    policy: PausePolicy,
    arguments: Mapping[str, object] | None,
    *,
    user: str | None = None,
    turn: str | None = None,
    sleep: Callable[[float], object] = time.sleep,
    heartbeat: Heartbeat | None = None,
) -> dict[str, Any]:
    """One ``agent_wait`` call in a synchronous tool: check, admit, wait, settle, audit.

    Args:
        policy: The shared policy (one per process).
        arguments: The model's arguments (``seconds``, ``user_message``, optional ``reason``).
        user: Who the wait is charged to, named by the host, never the model (None:
            ``"anonymous"``).
        turn: The turn id, named by the host (None: the user's implicit turn).
        sleep: How to wait (a host that can cancel passes e.g. an ``Event.wait``); the time
            actually waited is measured with the policy's clock.
        heartbeat: Receives a :class:`PauseHeartbeat` at once and then every
            ``heartbeat_interval_ms`` of the policy, as the MCP tool's progress notifications.
            The wait is then slept beat by beat, and a ``sleep`` that returns a true value (as
            ``Event.wait`` does when the event is set) ends it early. A heartbeat that raises
            is logged and the wait goes on without heartbeats.

    Returns:
        :func:`pause_result` after the wait, or :func:`refusal_result` (``refused`` is
        ``invalid_input`` or the policy's code) without waiting. Never raises for the
        model's input or the caps: the model reads the result and carries on.
    """
    admitted = _admitted(policy, arguments, user, turn)
    if isinstance(admitted, dict):
        return admitted
    request, grant = admitted
    beats = _Beats(policy, request, grant, heartbeat)
    outcome = "failed"
    try:
        if heartbeat is None:
            sleep(grant.granted_seconds)
        while heartbeat is not None and (now := policy.now()) < beats.deadline:
            if beats.send is not None:
                try:
                    beats.send(beats.beat(now))
                except Exception:  # noqa: BLE001 - reported, and the wait goes on
                    beats.failed()
            after = policy.now()
            if sleep(max(0.0, beats.until(after) - after)):
                break
        outcome = "completed"
    finally:
        waited = policy.now() - beats.start
        policy.finish(grant, waited)
        audit_finished(outcome, grant, waited, request.reason)
    return pause_result(grant, waited)


async def apause(
    policy: PausePolicy,
    arguments: Mapping[str, object] | None,
    *,
    user: str | None = None,
    turn: str | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    heartbeat: Heartbeat | None = None,
) -> dict[str, Any]:
    """Async :func:`pause`; ``heartbeat`` may be a coroutine function.

    A cancelled task ends the wait at once, hands the part not waited back to the turn, writes
    ``outcome=cancelled`` and re-raises.
    """
    admitted = _admitted(policy, arguments, user, turn)
    if isinstance(admitted, dict):
        return admitted
    request, grant = admitted
    return await await_grant(policy, request, grant, sleep=sleep, heartbeat=heartbeat)


async def await_grant(
    policy: PausePolicy,
    request: PauseRequest,
    grant: PauseGrant,
    *,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    heartbeat: Heartbeat | None = None,
    log: logging.Logger = _audit,
) -> dict[str, Any]:
    """The wait of :func:`apause` for a grant its host admitted itself: wait, settle, audit.

    For a host that checks the call and shapes refusals its own way (the MCP server answers
    with protocol errors), then waits on the same schedule as the framework tools.

    Args:
        policy: The policy that admitted ``grant``.
        request: The admitted call.
        grant: What :meth:`PausePolicy.admit` granted.
        sleep: How to wait (``anyio.sleep`` under AnyIO); a true return ends the wait early.
        heartbeat: As for :func:`pause` (may be a coroutine function).
        log: Where the audit line and a failed heartbeat's warning go.

    Returns:
        :func:`pause_result` after the wait.
    """
    beats = _Beats(policy, request, grant, heartbeat)
    outcome = "failed"
    try:
        if heartbeat is None:
            await sleep(grant.granted_seconds)
        while heartbeat is not None and (now := policy.now()) < beats.deadline:
            if beats.send is not None:
                try:
                    sent = beats.send(beats.beat(now))
                    if inspect.isawaitable(sent):
                        await sent
                except Exception:  # noqa: BLE001 - reported, and the wait goes on
                    beats.failed(log)
            after = policy.now()
            if await sleep(max(0.0, beats.until(after) - after)):
                break
        outcome = "completed"
    except asyncio.CancelledError:
        outcome = "cancelled"
        raise
    finally:
        waited = policy.now() - beats.start
        policy.finish(grant, waited)
        audit_finished(outcome, grant, waited, request.reason, log)
    return pause_result(grant, waited)
