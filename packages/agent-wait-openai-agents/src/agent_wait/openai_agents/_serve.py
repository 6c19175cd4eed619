"""The OpenAI Agents SDK worker: :func:`handle_message` for every message of an entry point."""

# No postponed annotations here: a TypedDict knows its Required keys only from evaluated ones.

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any, Required, Unpack, cast

from agents import Agent, RunConfig

from agent_wait.core import Announce, EntryPoint
from agent_wait.host import FrameworkWorker, ServeOptions, ServeReport
from agent_wait.openai_agents._history import RunStore
from agent_wait.openai_agents._host import (
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
)

# A thread no run uses: reading it finds nothing.
_PROBE_THREAD = "agent-wait-readiness"


class OpenAIAgentsServeOptions(ServeOptions, total=False):
    """What :func:`serve` and :func:`aserve` take.

    :class:`~agent_wait.host.ServeOptions`, and what :func:`handle_message` (or, with
    ``stream``, :func:`stream_message`) takes.
    """

    runs: Required[RunStore]
    """Where each thread's run is kept."""
    run_config: RunConfig | None
    max_turns: int | None


def _readiness(_agent: object, options: Mapping[str, Any]) -> dict[str, Callable[[], object]]:
    """``/readyz`` reads a thread from the run store."""
    runs = cast("RunStore", options["runs"])
    return {"runs": lambda: runs.load(_PROBE_THREAD)}


_WORKER = FrameworkWorker(
    handle_message,
    ahandle_message,
    stream_message,
    astream_message,
    OpenAIAgentsServeOptions,
    _readiness,
)


def serve(
    agent: Agent[Any],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: threading.Event | None = None,
    **options: Unpack[OpenAIAgentsServeOptions],
) -> ServeReport:
    """Run an OpenAI Agents SDK host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(agent, message, announce, runs=runs,
    strict=True, ...)``, which stores the run before returning, and is acknowledged only then;
    a failed publish or any other error leaves it to be handed out again, a malformed message
    is dead-lettered. Messages of one thread are never handled at once; different threads run
    in parallel up to ``concurrency``. SIGTERM or SIGINT (or ``stop``) stops receiving; the
    messages in hand are finished first.

    Args:
        agent: The agent.
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        stop: Set it to stop the worker from another thread.
        **options: :class:`OpenAIAgentsServeOptions`: ``runs`` (required: where each
            thread's run is kept), ``concurrency``, ``wait``, ``health`` (``/readyz`` also
            reads a thread from ``runs``, and answers 503 naming ``runs`` when that fails),
            ``stream`` (``stream(thread_id, event)`` for every SDK stream event of every run:
            each message is then handled with :func:`stream_message`), and ``reply_to``,
            ``clock``, ``trust``, ``run_config``, ``max_turns`` for :func:`handle_message`.

    Raises:
        TypeError: No ``runs``, or an option it does not take.
    """
    return _WORKER.serve(agent, entry, announce, stop, options)


async def aserve(
    agent: Agent[Any],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: asyncio.Event | None = None,
    **options: Unpack[OpenAIAgentsServeOptions],
) -> ServeReport:
    """Async :func:`serve` with :func:`ahandle_message`.

    With ``stream`` (a function or a coroutine function of ``(thread_id, event)``), each
    message is handled with :func:`astream_message`.
    """
    return await _WORKER.aserve(agent, entry, announce, stop, options)
