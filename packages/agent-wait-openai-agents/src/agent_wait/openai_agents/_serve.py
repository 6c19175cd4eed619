"""The OpenAI Agents SDK worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from agents import Agent

from agent_wait.core import Announce, EntryPoint
from agent_wait.host import ServeReport, aserve_host, serve_host
from agent_wait.openai_agents._history import RunStore
from agent_wait.openai_agents._host import (
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
)

# A thread no run uses: reading it finds nothing.
_PROBE_THREAD = "agent-wait-readiness"


def _readiness(runs: RunStore) -> dict[str, Callable[[], object]]:
    """``/readyz`` reads a thread from the run store."""
    return {"runs": lambda: runs.load(_PROBE_THREAD)}


def serve(
    agent: Agent[Any],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    runs: RunStore,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: threading.Event | None = None,
    stream: Callable[[str, Any], object] | None = None,
    health: int | str | None = None,
    **host_options: Any,
) -> ServeReport:
    """Run an OpenAI Agents SDK host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(agent, message, announce, runs=runs,
    strict=True, **host_options)``, which stores the run before returning, and is acknowledged
    only then; a failed publish or any other error leaves it to be handed out again, a
    malformed message is dead-lettered. Messages of one thread are never handled at once;
    different threads run in parallel up to ``concurrency``. SIGTERM or SIGINT (or ``stop``)
    stops receiving; the messages in hand are finished first.

    Args:
        agent: The agent.
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        runs: Where each thread's run is kept.
        concurrency: How many threads are handled at once.
        wait: Seconds each receive waits (the longest a stop waits for it).
        stop: Set it to stop the worker from another thread.
        stream: ``stream(thread_id, event)`` for every SDK stream event of every run: each
            message is then handled with :func:`stream_message`. A ``stream`` that raises
            stops that run; nothing of it is stored or published and the message is handed
            out again.
        health: Serve ``/healthz`` and ``/readyz`` on this port (or ``"host:port"``);
            ``/readyz`` also reads a thread from ``runs``, and answers 503 naming ``runs``
            when that fails.
        host_options: ``reply_to``, ``clock``, ``trust``, ``run_config`` and ``max_turns``
            for :func:`handle_message` (or :func:`stream_message`).
    """
    return serve_host(
        handle_message,
        agent,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        stream_message=stream_message,
        health=health,
        ready=_readiness(runs),
        runs=runs,
        **host_options,
    )


async def aserve(
    agent: Agent[Any],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    runs: RunStore,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: asyncio.Event | None = None,
    stream: Callable[[str, Any], object] | None = None,
    health: int | str | None = None,
    **host_options: Any,
) -> ServeReport:
    """Async :func:`serve` with :func:`ahandle_message`.

    With ``stream`` (a function or a coroutine function of ``(thread_id, event)``), each
    message is handled with :func:`astream_message`.
    """
    return await aserve_host(
        ahandle_message,
        agent,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        astream_message=astream_message,
        health=health,
        ready=_readiness(runs),
        runs=runs,
        **host_options,
    )
