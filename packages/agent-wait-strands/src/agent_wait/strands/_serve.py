"""The Strands worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from agent_wait.core import Announce, EntryPoint
from agent_wait.host import ServeReport, aserve_host, serve_host
from agent_wait.strands._host import (
    AgentFactory,
    Runner,
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
)

# A session no run uses: reading it finds nothing.
_PROBE_SESSION = "agent-wait-readiness"


def _readiness(host_options: dict[str, Any]) -> dict[str, Callable[[], object]]:
    """``/readyz`` reads a session from ``session_repository``, when one is given.

    Without it the sessions' storage is the factory's own, out of the worker's sight.
    """
    repository = host_options.get("session_repository")
    if repository is None:
        return {}
    return {"sessions": lambda: repository.read_session(_PROBE_SESSION)}


def serve(
    agent_factory: Callable[[str], Runner],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: threading.Event | None = None,
    stream: Callable[[str, Any], object] | None = None,
    health: int | str | None = None,
    **host_options: Any,
) -> ServeReport:
    """Run a Strands host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(agent_factory, message, announce,
    strict=True, **host_options)`` and acknowledged only when that returns; a failed publish or
    any other error leaves it to be handed out again, a malformed message is dead-lettered.
    Messages of one thread are never handled at once; different threads run in parallel up to
    ``concurrency``. SIGTERM or SIGINT (or ``stop``) stops receiving; the messages in hand are
    finished first.

    Args:
        agent_factory: ``agent_factory(thread_id)`` builds the agent with its session manager.
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        concurrency: How many threads are handled at once.
        wait: Seconds each receive waits (the longest a stop waits for it).
        stop: Set it to stop the worker from another thread.
        stream: ``stream(thread_id, event)`` for every Strands event of every run: each
            message is then handled with :func:`stream_message`. A ``stream`` that raises
            stops that run; nothing of it is published and the message is handed out again.
        health: Serve ``/healthz`` and ``/readyz`` on this port (or ``"host:port"``); with a
            ``session_repository``, ``/readyz`` also reads a session from it, and answers 503
            naming ``sessions`` when that fails.
        host_options: ``reply_to``, ``clock``, ``trust``, ``prompt``, ``session_repository``,
            ``agent_id``: passed to :func:`handle_message`.
    """
    return serve_host(
        handle_message,
        agent_factory,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        stream_message=stream_message,
        health=health,
        ready=_readiness(host_options),
        **host_options,
    )


async def aserve(
    agent_factory: AgentFactory,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    concurrency: int = 4,
    wait: float = 1.0,
    stop: asyncio.Event | None = None,
    stream: Callable[[str, Any], object] | None = None,
    health: int | str | None = None,
    **host_options: Any,
) -> ServeReport:
    """Async :func:`serve` with :func:`ahandle_message` (``agent_factory`` may be async).

    With ``stream`` (a function or a coroutine function of ``(thread_id, event)``), each
    message is handled with :func:`astream_message`.
    """
    return await aserve_host(
        ahandle_message,
        agent_factory,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        astream_message=astream_message,
        health=health,
        ready=_readiness(host_options),
        **host_options,
    )
