"""The LangGraph worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, cast

from agent_wait.core import Announce, EntryPoint
from agent_wait.host import ServeReport, aserve_host, serve_host
from agent_wait.langgraph._host import (
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
)
from langgraph.checkpoint.base import BaseCheckpointSaver

# A thread no run uses: reading it costs one indexed lookup that finds nothing.
_PROBE_CONFIG: Any = {"configurable": {"thread_id": "agent-wait-readiness", "checkpoint_ns": ""}}


def _readiness(graph: Any) -> dict[str, Callable[[], object]]:
    """``/readyz`` reads a checkpoint through the graph's checkpointer, when it has one.

    The sync read works for the async savers too: called from the health server's thread, they
    run it on the worker's event loop.
    """
    checkpointer = getattr(graph, "checkpointer", None)
    if not isinstance(checkpointer, BaseCheckpointSaver):
        return {}
    saver = cast("BaseCheckpointSaver[Any]", checkpointer)
    return {"checkpointer": lambda: saver.get_tuple(_PROBE_CONFIG)}


def serve(
    graph: Any,
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
    """Run a LangGraph host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(graph, message, announce, strict=True,
    **host_options)`` and acknowledged only when that returns; a failed publish
    (``AnnounceFailed``) or any other error leaves it to be handed out again, a malformed
    message is dead-lettered. Messages of one thread are never handled at once; different
    threads run in parallel up to ``concurrency``. SIGTERM or SIGINT (or ``stop``) stops
    receiving; the messages in hand are finished first.

    Args:
        graph: The compiled graph, with a checkpointer that several threads can share.
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        concurrency: How many threads are handled at once.
        wait: Seconds each receive waits (the longest a stop waits for it).
        stop: Set it to stop the worker from another thread.
        stream: ``stream(thread_id, chunk)`` for every chunk of every run: each message is
            then handled with :func:`stream_message` (``stream_mode`` and ``subgraphs`` among
            ``host_options``). A ``stream`` that raises stops that run; nothing of it is
            published and the message is handed out again.
        health: Serve ``/healthz`` and ``/readyz`` on this port (or ``"host:port"``);
            ``/readyz`` also reads a checkpoint through the graph's checkpointer, and answers
            503 naming ``checkpointer`` when that fails.
        host_options: ``reply_to``, ``config``, ``clock``, ``trust``, ``interrupt_before``,
            ``interrupt_after`` (and with ``stream``, ``stream_mode``, ``subgraphs``): passed to
            :func:`handle_message`.

    Raises:
        TypeError: ``stream_mode`` or ``subgraphs`` without ``stream``.

    Returns:
        What was acknowledged, retried and dead-lettered.
    """
    _check_streaming(stream, host_options)
    return serve_host(
        handle_message,
        graph,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        stream_message=stream_message,
        health=health,
        ready=_readiness(graph),
        **host_options,
    )


async def aserve(
    graph: Any,
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
    """Async :func:`serve` with :func:`ahandle_message` (async checkpointers, nodes and tools).

    With ``stream`` (a function or a coroutine function of ``(thread_id, chunk)``), each
    message is handled with :func:`astream_message`.
    """
    _check_streaming(stream, host_options)
    return await aserve_host(
        ahandle_message,
        graph,
        entry,
        announce,
        concurrency=concurrency,
        wait=wait,
        stop=stop,
        stream=stream,
        astream_message=astream_message,
        health=health,
        ready=_readiness(graph),
        **host_options,
    )


def _check_streaming(stream: object, host_options: dict[str, Any]) -> None:
    # Refused here: handle_message would refuse them with every message, each handed out again.
    options = sorted({"stream_mode", "subgraphs"} & set(host_options))
    if stream is None and options:
        raise TypeError(f"{options}: stream options go with stream=(thread_id, chunk) -> None")
