"""What a message or a page shows of a question: the function and its arguments, cut short."""

from __future__ import annotations

import json
from typing import Any, cast

from agent_wait.core import WaitEnvelope

_MAX_ARGUMENTS = 20
_MAX_VALUE = 300


def shorten(value: Any) -> str:
    """``value`` as text (JSON unless a string), cut at 300 characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 3] + "..."


def call_of(envelope: WaitEnvelope) -> tuple[str | None, list[tuple[str, str]]]:
    """The function that asks and its arguments as (name, shown value) pairs."""
    question: Any = envelope.question
    function = envelope.source.function if envelope.source is not None else None
    if not isinstance(question, dict):
        return function, [("question", shorten(question))]
    asked = cast("dict[str, Any]", question)
    if function is None and isinstance(asked.get("function"), str):
        function = cast("str", asked["function"])
    arguments = asked.get("args")
    if not isinstance(arguments, dict):
        return function, [("question", shorten(question))]
    items = list(cast("dict[str, Any]", arguments).items())
    shown = [(str(name), shorten(value)) for name, value in items[:_MAX_ARGUMENTS]]
    if len(items) > _MAX_ARGUMENTS:
        shown.append(("...", f"{len(items) - _MAX_ARGUMENTS} more arguments"))
    return function, shown
