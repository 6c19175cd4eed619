"""The Pydantic AI worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any, cast

from agent_wait.core import Announce, EntryPoint
from agent_wait.host import FrameworkWorker, ServeReport
from agent_wait.pydantic_ai._history import HistoryStore, IndexedHistoryStore
from agent_wait.pydantic_ai._host import (
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
)
from pydantic_ai import Agent

UserPrompt = str | Callable[[Mapping[str, Any]], str | None] | None
"""A new user prompt sent with the deferred results of every resume: text, or a function of
the answer message that returns it (None: no prompt for that answer)."""


def _prompt_for(message: Mapping[str, Any], user_prompt: UserPrompt) -> str | None:
    if user_prompt is None or "question_id" not in message:
        return None  # a start message carries its own prompt as input
    return user_prompt(message) if callable(user_prompt) else user_prompt


def _prompted(host: Callable[..., Any], user_prompt: UserPrompt) -> Callable[..., Any]:
    """``host`` (any of the four) given each answer's prompt.

    An async host's awaitable is returned as it is, for the worker to await.
    """
    if user_prompt is None:
        return host

    def handle(agent: Any, message: Mapping[str, Any], *args: Any, **options: Any) -> Any:
        prompt = _prompt_for(message, user_prompt)
        return host(agent, message, *args, user_prompt=prompt, **options)

    return handle


# A thread no run uses: reading it finds nothing.
_PROBE_THREAD = "agent-wait-readiness"


def _history_ready(_agent: object, options: Mapping[str, Any]) -> dict[str, Callable[[], object]]:
    """``/readyz`` reads a thread from the history store: its index alone, when it keeps one."""
    history = cast("HistoryStore", options["history"])
    if isinstance(history, IndexedHistoryStore):
        return {"history": lambda: history.load_index(_PROBE_THREAD)}
    return {"history": lambda: history.load(_PROBE_THREAD)}


def _worker(user_prompt: UserPrompt) -> FrameworkWorker:
    """The worker of the four entry points, each answer given its ``user_prompt``."""
    # Refused here: handle_message would refuse it with every message, each handed out again.
    if user_prompt is not None and not isinstance(user_prompt, str) and not callable(user_prompt):
        raise TypeError(
            f"user_prompt: expected text or a function of the answer message, got {user_prompt!r}"
        )
    # No option names to check: every name that is not the worker's goes to agent.run.
    return FrameworkWorker(
        _prompted(handle_message, user_prompt),
        _prompted(ahandle_message, user_prompt),
        _prompted(stream_message, user_prompt),
        _prompted(astream_message, user_prompt),
        ready=_history_ready,
    )


def serve(
    agent: Agent[Any, Any],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    history: HistoryStore,
    stop: threading.Event | None = None,
    user_prompt: UserPrompt = None,
    **options: Any,
) -> ServeReport:
    """Run a Pydantic AI host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(agent, message, announce, history=history,
    strict=True, ...)``, which stores the history before returning, and is acknowledged only
    then; a failed publish or any other error leaves it to be handed out again, a malformed
    message is dead-lettered. Messages of one thread are never handled at once; different
    threads run in parallel up to ``concurrency``. SIGTERM or SIGINT (or ``stop``) stops
    receiving; the messages in hand are finished first.

    Args:
        agent: The agent.
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        history: Where each thread's message history is kept.
        stop: Set it to stop the worker from another thread.
        user_prompt: A new user prompt sent with the deferred results of each answer
            (``handle_message(..., user_prompt=...)``): text for every answer, or a function
            of the answer message (a dict) returning the text or None. Start messages carry
            their own prompt and get none.
        **options: :class:`~agent_wait.host.ServeOptions`: ``concurrency``, ``wait``,
            ``health`` (``/readyz`` also reads a thread from ``history``, and answers 503
            naming ``history`` when that fails), ``stream`` (``stream(thread_id, event)`` for
            every Pydantic AI event of every run: each message is then handled with
            :func:`stream_message`), ``reply_to``, ``clock``, ``trust``; every other name is a
            run option for :func:`handle_message`.

    Raises:
        TypeError: ``user_prompt`` is neither text nor a function.
    """
    return _worker(user_prompt).serve(agent, entry, announce, stop, {"history": history, **options})


async def aserve(
    agent: Agent[Any, Any],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    history: HistoryStore,
    stop: asyncio.Event | None = None,
    user_prompt: UserPrompt = None,
    **options: Any,
) -> ServeReport:
    """Async :func:`serve` with :func:`ahandle_message`.

    With ``stream`` (a function or a coroutine function of ``(thread_id, event)``), each
    message is handled with :func:`astream_message`.
    """
    options = {"history": history, **options}
    return await _worker(user_prompt).aserve(agent, entry, announce, stop, options)
