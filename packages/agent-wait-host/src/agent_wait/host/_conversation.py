"""Who asked and what led to it: the asker's part of a question's ``context``.

The framework and the agent's name are always filled in by the hosts that know them. The
conversation's last messages are not: they may hold what the run's user typed, and every
announcer (a chat channel, a queue, an email) would carry them, so a host shares them only
inside ``with share_messages(n):``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from agent_wait.core._models import (
    MAX_CONTEXT_MESSAGES,
    MESSAGE_TEXT_LIMIT,
    CallContext,
    ContextMessage,
    Question,
)

_M = TypeVar("_M")
_ROLE_LIMIT = 32
_shared: ContextVar[int] = ContextVar("agent_wait_shared_messages", default=0)


@contextmanager
def share_messages(count: int) -> Generator[None]:
    """Questions published inside the block carry the conversation's last ``count`` messages.

    Each message is its role and text only (tool calls, images and files are left out), cut to
    500 characters. Everyone who can read an announcer's messages reads
    them: share only a conversation that its readers may see. Hosts that keep the conversation
    (LangGraph's ``messages`` state key, Pydantic AI, Strands, the OpenAI Agents SDK) fill them
    in; ``count`` 0 shares none, as outside the block.

    Raises:
        ValueError: ``count`` is not an integer from 0 to 10.
    """
    if type(count) is not int or not 0 <= count <= MAX_CONTEXT_MESSAGES:  # bool is refused too
        raise ValueError(
            f"share_messages: count must be an integer from 0 to {MAX_CONTEXT_MESSAGES}, "
            f"got {count!r}"
        )
    token = _shared.set(count)
    try:
        yield
    finally:
        _shared.reset(token)


def last_messages(
    messages: Sequence[_M], read: Callable[[_M], tuple[str, str] | None]
) -> list[ContextMessage]:
    """The last messages to share, oldest first: none outside :func:`share_messages`.

    ``read`` gives a framework message's role and text, or None for one without text (a
    tool call); messages whose text is blank are skipped too. Only the messages needed are
    read, from the end.
    """
    count = _shared.get()
    found: list[ContextMessage] = []
    for message in reversed(messages):
        if len(found) >= count:
            break
        said = read(message)
        if said is None or not said[1].strip():
            continue
        role, text = said[0].strip()[:_ROLE_LIMIT] or "unknown", said[1].strip()
        if len(text) > MESSAGE_TEXT_LIMIT:
            text = text[: MESSAGE_TEXT_LIMIT - 1] + "…"
        found.append(ContextMessage(role=role, text=text))
    found.reverse()
    return found


def with_asker(
    questions: Sequence[Question],
    framework: str,
    agent: str | None = None,
    messages: Sequence[ContextMessage] = (),
) -> list[Question]:
    """``questions`` with the framework, the agent's name and shared messages in their context.

    What the framework's own adapter put in ``context`` (node, tool call) is kept.
    """
    shared = list(messages)
    alone = CallContext(framework=framework, agent=agent or None, messages=shared)
    asker = {"framework": framework, "agent": agent or None, "messages": shared}
    return [
        question.model_copy(
            update={
                "context": alone
                if question.context is None
                else question.context.model_copy(update=asker)
            }
        )
        for question in questions
    ]
