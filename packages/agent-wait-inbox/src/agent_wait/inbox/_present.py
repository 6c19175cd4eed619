"""How a question reads at a glance, beyond core's call summary and deadline words.

When it was asked, who asked, the default in words: plain functions of an envelope and the
current time, shared by the list, the history and the question page (the pages' script only
turns the UTC times into the reader's local time).
"""

from __future__ import annotations

from datetime import UTC, datetime

from agent_wait.core import WaitEnvelope, brief
from agent_wait.inbox._batch import mapping

# Crockford's base-32 digits, as the digits int(..., 32) reads.
_BASE32 = str.maketrans(
    "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz",
    "0123456789abcdefghijklmnopqrstuvabcdefghijklmnopqrstuv",
)


def asked_at(envelope: WaitEnvelope) -> datetime | None:
    """When the question was published: the time inside its event id (a ULID), if it is one."""
    head = envelope.event_id[:10]
    try:
        millis = int(head.translate(_BASE32), 32)
    except ValueError:
        return None
    return datetime.fromtimestamp(millis / 1000, UTC)


def parse_utc(text: str | None) -> datetime | None:
    """An RFC 3339 UTC time, or None."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def ago(moment: datetime | None, now: datetime) -> str:
    """``12 min ago``, ``just now``, or "" when unknown."""
    if moment is None:
        return ""
    seconds = (now - moment).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 2 * 86400:
        return f"{round(seconds / 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def default_text(default: object) -> str:
    """What applies when nobody answers: ``reject (no response within P3D)``, or JSON in brief."""
    if default is None:
        return "none"
    fields = mapping(default)
    action = fields.get("action")
    if isinstance(action, str):
        rest = [brief(v, 48) for k, v in fields.items() if k != "action"]
        return f"{action} ({'; '.join(rest)})" if rest else action
    return brief(default, 64)
