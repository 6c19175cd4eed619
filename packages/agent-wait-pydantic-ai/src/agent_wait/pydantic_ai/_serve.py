"""The Pydantic AI worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from agent_wait.core import Announce, EntryPoint, ServeReport
from agent_wait.core.host import aserve_host, serve_host
from agent_wait.pydantic_ai._history import HistoryStore
from agent_wait.pydantic_ai._host import ahandle_message, handle_message
from pydantic_ai import Agent


def serve(
    agent: Agent[Any, Any],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    history: HistoryStore,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: threading.Event | None = None,
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
        host_options: ``reply_to``, ``clock``, ``trust`` and run options for
            :func:`handle_message`.
    """
    return serve_host(
        handle_message,
        agent,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        history=history,
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
    **host_options: Any,
) -> ServeReport:
    """Async :func:`serve` with :func:`ahandle_message`."""
    return await aserve_host(
        ahandle_message,
        agent,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        history=history,
        **host_options,
    )
