"""Text from senders, made safe to put in a log line."""

from __future__ import annotations


def log_safe(value: object) -> str:
    r"""``value`` as text for one log line: every unprintable character escaped as ``repr`` does.

    Thread ids, question ids and other values any sender chooses go into log lines through
    this, so a newline cannot start a forged line and an ANSI escape cannot reach a terminal:
    ``log_safe("t\n2026 INFO forged")`` is ``'t\\n2026 INFO forged'``. Printable text,
    non-ASCII letters included, is unchanged.
    """
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
