"""The Google ADK worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from google.adk.runners import Runner

from agent_wait.core import Announce, EntryPoint
from agent_wait.google_adk._host import (
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
)
from agent_wait.host import ServeReport, aserve_host, serve_host


def serve(
    runner: Runner,
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
    """Run a Google ADK host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(runner, message, announce, strict=True,
    **host_options)`` and acknowledged only when that returns; a failed publish or any other
    error leaves it to be handed out again, a malformed message is dead-lettered. Messages of
    one thread are never handled at once; different threads run in parallel up to
    ``concurrency``. SIGTERM or SIGINT (or ``stop``) stops receiving; the messages in hand are
    finished first.

    Args:
        runner: The ADK ``Runner``; its session service keeps every thread (a
            ``DatabaseSessionService`` for threads that outlive the process).
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        concurrency: How many threads are handled at once.
        wait: Seconds each receive waits (the longest a stop waits for it).
        stop: Set it to stop the worker from another thread.
        stream: ``stream(thread_id, event)`` for every ADK event of every run: each message
            is then handled with :func:`stream_message`. A ``stream`` that raises stops that
            run; nothing of it is published (what ADK stored by then stays in the session) and
            the message is handed out again.
        health: Serve ``/healthz`` and ``/readyz`` on this port (or ``"host:port"``).
        host_options: ``user_id``, ``reply_to``, ``clock``, ``trust``: passed to
            :func:`handle_message` (or :func:`stream_message`).
    """
    return serve_host(
        handle_message,
        runner,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        stream_message=stream_message,
        health=health,
        **host_options,
    )


async def aserve(
    runner: Runner,
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
    """Async :func:`serve` with :func:`ahandle_message`.

    With ``stream`` (a function or a coroutine function of ``(thread_id, event)``), each
    message is handled with :func:`astream_message`.
    """
    return await aserve_host(
        ahandle_message,
        runner,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        astream_message=astream_message,
        health=health,
        **host_options,
    )
