"""The Pydantic AI worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from agent_wait.core import Announce, EntryPoint
from agent_wait.host import ServeReport, aserve_host, serve_host
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


class _WithHistory(TypedDict):
    """What serve and aserve pass on about the history store: it, and ``/readyz`` reading it."""

    history: HistoryStore
    ready: dict[str, Callable[[], object]]


def _with_history(history: HistoryStore) -> _WithHistory:
    # /readyz reads a thread from the store: its index alone, when it keeps one.
    if isinstance(history, IndexedHistoryStore):
        return {"history": history, "ready": {"history": lambda: history.load_index(_PROBE_THREAD)}}
    return {"history": history, "ready": {"history": lambda: history.load(_PROBE_THREAD)}}


def _check_user_prompt(user_prompt: object) -> None:
    # Refused here: handle_message would refuse it with every message, each handed out again.
    if user_prompt is not None and not isinstance(user_prompt, str) and not callable(user_prompt):
        raise TypeError(
            f"user_prompt: expected text or a function of the answer message, got {user_prompt!r}"
        )


def serve(
    agent: Agent[Any, Any],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    history: HistoryStore,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: threading.Event | None = None,
    stream: Callable[[str, Any], object] | None = None,
    user_prompt: UserPrompt = None,
    health: int | str | None = None,
    **host_options: Any,
) -> ServeReport:
    """Run a Pydantic AI host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(agent, message, announce, history=history,
    strict=True, **host_options)``, which stores the history before returning, and is
    acknowledged only then; a failed publish or any other error leaves it to be handed out
    again, a malformed message is dead-lettered. Messages of one thread are never handled at
    once; different threads run in parallel up to ``concurrency``. SIGTERM or SIGINT (or
    ``stop``) stops receiving; the messages in hand are finished first.

    Args:
        agent: The agent.
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        history: Where each thread's message history is kept.
        concurrency: How many threads are handled at once.
        wait: Seconds each receive waits (the longest a stop waits for it).
        stop: Set it to stop the worker from another thread.
        stream: ``stream(thread_id, event)`` for every Pydantic AI event of every run: each
            message is then handled with :func:`stream_message`. A ``stream`` that raises
            stops that run; nothing of it is saved or published and the message is handed out
            again.
        user_prompt: A new user prompt sent with the deferred results of each answer
            (``handle_message(..., user_prompt=...)``): text for every answer, or a function
            of the answer message (a dict) returning the text or None. Start messages carry
            their own prompt and get none.
        health: Serve ``/healthz`` and ``/readyz`` on this port (or ``"host:port"``);
            ``/readyz`` also reads a thread from ``history``, and answers 503 naming
            ``history`` when that fails.
        host_options: ``reply_to``, ``clock``, ``trust`` and run options for
            :func:`handle_message`.

    Raises:
        TypeError: ``user_prompt`` is neither text nor a function.
    """
    _check_user_prompt(user_prompt)
    return serve_host(
        _prompted(handle_message, user_prompt),
        agent,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        stream_message=_prompted(stream_message, user_prompt),
        health=health,
        **_with_history(history),
        **host_options,
    )


async def aserve(
    agent: Agent[Any, Any],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    history: HistoryStore,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: asyncio.Event | None = None,
    stream: Callable[[str, Any], object] | None = None,
    user_prompt: UserPrompt = None,
    health: int | str | None = None,
    **host_options: Any,
) -> ServeReport:
    """Async :func:`serve` with :func:`ahandle_message`.

    With ``stream`` (a function or a coroutine function of ``(thread_id, event)``), each
    message is handled with :func:`astream_message`.
    """
    _check_user_prompt(user_prompt)
    return await aserve_host(
        _prompted(ahandle_message, user_prompt),
        agent,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        astream_message=_prompted(astream_message, user_prompt),
        health=health,
        **_with_history(history),
        **host_options,
    )
