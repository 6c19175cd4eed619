"""The LangGraph worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any, Unpack, cast

from langchain_core.runnables import RunnableConfig

from agent_wait.core import Announce, EntryPoint
from agent_wait.host import FrameworkWorker, ServeOptions, ServeReport
from agent_wait.langgraph._breakpoints import Breakpoints
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


class LangGraphServeOptions(ServeOptions, total=False):
    """What :func:`serve` and :func:`aserve` take.

    :class:`~agent_wait.host.ServeOptions`, and what :func:`handle_message` (or, with
    ``stream``, :func:`stream_message`) takes.
    """

    config: RunnableConfig | Mapping[str, Any] | None
    interrupt_before: Breakpoints | None
    interrupt_after: Breakpoints | None
    stream_mode: Any
    """With ``stream`` only."""
    subgraphs: bool
    """With ``stream`` only."""


def _checked_readiness(graph: Any, options: Mapping[str, Any]) -> dict[str, Callable[[], object]]:
    # Refused here: handle_message would refuse them with every message, each handed out again.
    streaming = sorted({"stream_mode", "subgraphs"} & set(options))
    if options.get("stream") is None and streaming:
        raise TypeError(f"{streaming}: stream options go with stream=(thread_id, chunk) -> None")
    return _readiness(graph)


_WORKER = FrameworkWorker(
    handle_message,
    ahandle_message,
    stream_message,
    astream_message,
    LangGraphServeOptions,
    _checked_readiness,
)


def serve(
    graph: Any,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: threading.Event | None = None,
    **options: Unpack[LangGraphServeOptions],
) -> ServeReport:
    """Run a LangGraph host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(graph, message, announce, strict=True,
    ...)`` and acknowledged only when that returns; a failed publish (``AnnounceFailed``) or any
    other error leaves it to be handed out again, a malformed message is dead-lettered.
    Messages of one thread are never handled at once; different threads run in parallel up to
    ``concurrency``. SIGTERM or SIGINT (or ``stop``) stops receiving; the messages in hand are
    finished first.

    Args:
        graph: The compiled graph, with a checkpointer that several threads can share.
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        stop: Set it to stop the worker from another thread.
        **options: :class:`LangGraphServeOptions`: ``concurrency``, ``wait``, ``health``
            (``/readyz`` also reads a checkpoint through the graph's checkpointer, and answers
            503 naming ``checkpointer`` when that fails), ``stream`` (``stream(thread_id,
            chunk)`` for every chunk of every run: each message is then handled with
            :func:`stream_message`, with ``stream_mode`` and ``subgraphs``), and ``reply_to``,
            ``config``, ``clock``, ``trust``, ``interrupt_before``, ``interrupt_after`` for
            :func:`handle_message`.

    Raises:
        TypeError: An option it does not take, or ``stream_mode`` or ``subgraphs`` without
            ``stream``.

    Returns:
        What was acknowledged, retried and dead-lettered.
    """
    return _WORKER.serve(graph, entry, announce, stop, options)


async def aserve(
    graph: Any,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: asyncio.Event | None = None,
    **options: Unpack[LangGraphServeOptions],
) -> ServeReport:
    """Async :func:`serve` with :func:`ahandle_message` (async checkpointers, nodes and tools).

    With ``stream`` (a function or a coroutine function of ``(thread_id, chunk)``), each
    message is handled with :func:`astream_message`.
    """
    return await _WORKER.aserve(graph, entry, announce, stop, options)
