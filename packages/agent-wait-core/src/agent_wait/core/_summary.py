"""A question at a glance: its call in one line, its deadline in words, who asked.

What the inbox's list and ``agent-wait inbox`` both show, so the two read alike.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from agent_wait.core._models import WaitEnvelope

SUMMARY_ARGS = 4
"""Arguments a one-line summary names; the others are counted."""
SUMMARY_TEXT = 32
"""Characters of a text argument a summary shows."""


def _number(value: float) -> str:
    """``41000`` as ``41,000``, ``1234.5`` as ``1,234.5``: digits grouped, nothing rounded."""
    if isinstance(value, int):
        return f"{value:,}"
    text = repr(value)
    if not math.isfinite(value) or "e" in text:
        return text
    whole, _, fraction = text.partition(".")
    return f"{int(whole):,}.{fraction}"


def brief(value: Any, width: int = SUMMARY_TEXT) -> str:
    """A JSON value in a few characters: numbers grouped, text cut, objects and lists counted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, str):
        return value if len(value) <= width else value[: width - 1] + "…"
    if isinstance(value, Mapping):
        count = len(cast("Mapping[str, Any]", value))
        return "{}" if not count else f"{{{count} field{'s' if count != 1 else ''}}}"
    if isinstance(value, list):
        count = len(cast("list[Any]", value))
        return f"[{count} item{'s' if count != 1 else ''}]"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def _object(value: Any) -> Mapping[str, Any]:
    # Envelope content is parsed JSON: a dict is the only mapping it holds (and is quick to test).
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _args_line(args: Mapping[str, Any]) -> str:
    shown = [f"{key}={brief(value)}" for key, value in list(args.items())[:SUMMARY_ARGS]]
    if len(args) > SUMMARY_ARGS:
        shown.append(f"+{len(args) - SUMMARY_ARGS} more")
    return ", ".join(shown)


def call_summary(envelope: WaitEnvelope) -> str:
    """The asked call in one line: ``issue_refund(order_id=order-4471, amount=41,000)``.

    The function (``source.function``, else the question's ``function``) and its first
    arguments, numbers grouped and long text cut; a batch of actions (``{"actions": [...]}``)
    reads as its calls; a question without arguments as its text, cut.
    """
    question = envelope.question
    body = _object(question)
    actions: Any = body.get("actions")
    items: list[Any] = cast("list[Any]", actions) if isinstance(actions, list) else []
    if items and all(isinstance(a, dict) for a in items):
        calls = [_object(a) for a in items]
        return "; ".join(
            f"{c.get('name', 'action')}({_args_line(_object(c.get('args')))})" for c in calls
        )
    named = body.get("function")
    function = envelope.source.function if envelope.source is not None else named
    name = function if isinstance(function, str) else None
    args = body.get("args")
    if isinstance(args, dict):
        return f"{name or 'call'}({_args_line(cast('dict[str, Any]', args))})"
    if name is None:
        return brief(question, 96)
    return f"{name}: {brief(question, 80)}"


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 60:
        return f"{int(seconds)} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{round(seconds / 3600)} h"
    return f"{int(seconds // 86400)} d"


@dataclass(frozen=True, slots=True)
class Deadline:
    """A deadline in words: ``in 3 h (14:00 UTC)``, or ``2 d overdue (Dec 2, 15:41 UTC)``."""

    relative: str
    """``in 3 h``, ``2 d overdue``, or ``no deadline``."""
    at: str
    """``14:00 UTC`` today, ``Dec 6, 14:00 UTC`` on another day; "" with no deadline."""
    exact: str
    """The RFC 3339 UTC time; "" with no deadline."""
    overdue: bool

    @property
    def text(self) -> str:
        """``in 3 h (14:00 UTC)``."""
        return f"{self.relative} ({self.at})" if self.at else self.relative


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def describe_deadline(expires_at: str | None, now: datetime | None = None) -> Deadline:
    """An envelope's ``expires_at`` as a person reads it, from ``now`` (default: the clock)."""
    if not expires_at:
        return Deadline("no deadline", "", "", False)
    try:
        moment = datetime.fromisoformat(expires_at)
    except ValueError:
        return Deadline(expires_at, "", expires_at, False)
    moment = moment.astimezone(UTC) if moment.tzinfo is not UTC else moment
    now = now or datetime.now(UTC)
    seconds = (moment - now).total_seconds()
    relative = f"in {_span(seconds)}" if seconds >= 0 else f"{_span(seconds)} overdue"
    # Built by hand rather than with strftime: a list page describes fifty of these.
    at = f"{moment.hour:02d}:{moment.minute:02d} UTC"
    if moment.date() != (now if now.tzinfo is UTC else now.astimezone(UTC)).date():
        at = f"{_MONTHS[moment.month - 1]} {moment.day}, {at}"
    return Deadline(relative, at, expires_at, seconds < 0)
