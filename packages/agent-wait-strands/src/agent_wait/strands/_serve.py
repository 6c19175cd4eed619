"""The Strands worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any, Unpack, cast

from agent_wait.core import Announce, EntryPoint
from agent_wait.host import FrameworkWorker, ServeOptions, ServeReport
from agent_wait.strands._host import (
    AgentFactory,
    Runner,
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
)
from strands.session.session_repository import SessionRepository

# A session no run uses: reading it finds nothing.
_PROBE_SESSION = "agent-wait-readiness"


class StrandsServeOptions(ServeOptions, total=False):
    """What :func:`serve` and :func:`aserve` take.

    :class:`~agent_wait.host.ServeOptions`, and what :func:`handle_message` (or, with
    ``stream``, :func:`stream_message`) takes.
    """

    prompt: Callable[[Any], Any]
    session_repository: SessionRepository | None
    agent_id: str


def _readiness(_factory: object, options: Mapping[str, Any]) -> dict[str, Callable[[], object]]:
    """``/readyz`` reads a session from ``session_repository``, when one is given.

    Without it the sessions' storage is the factory's own, out of the worker's sight.
    """
    repository = cast("SessionRepository | None", options.get("session_repository"))
    if repository is None:
        return {}
    return {"sessions": lambda: repository.read_session(_PROBE_SESSION)}


_WORKER = FrameworkWorker(
    handle_message,
    ahandle_message,
    stream_message,
    astream_message,
    StrandsServeOptions,
    _readiness,
)


def serve(
    agent_factory: Callable[[str], Runner],
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: threading.Event | None = None,
    **options: Unpack[StrandsServeOptions],
) -> ServeReport:
    """Run a Strands host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(agent_factory, message, announce,
    strict=True, ...)`` and acknowledged only when that returns; a failed publish or any other
    error leaves it to be handed out again, a malformed message is dead-lettered. Messages of
    one thread are never handled at once; different threads run in parallel up to
    ``concurrency``. SIGTERM or SIGINT (or ``stop``) stops receiving; the messages in hand are
    finished first.

    Args:
        agent_factory: ``agent_factory(thread_id)`` builds the agent with its session manager.
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        stop: Set it to stop the worker from another thread.
        **options: :class:`StrandsServeOptions`: ``concurrency``, ``wait``, ``health`` (with a
            ``session_repository``, ``/readyz`` also reads a session from it, and answers 503
            naming ``sessions`` when that fails), ``stream`` (``stream(thread_id, event)`` for
            every Strands event of every run: each message is then handled with
            :func:`stream_message`), and ``reply_to``, ``clock``, ``trust``, ``prompt``,
            ``session_repository``, ``agent_id`` for :func:`handle_message`.

    Raises:
        TypeError: An option it does not take.
    """
    return _WORKER.serve(agent_factory, entry, announce, stop, options)


async def aserve(
    agent_factory: AgentFactory,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: asyncio.Event | None = None,
    **options: Unpack[StrandsServeOptions],
) -> ServeReport:
    """Async :func:`serve` with :func:`ahandle_message` (``agent_factory`` may be async).

    With ``stream`` (a function or a coroutine function of ``(thread_id, event)``), each
    message is handled with :func:`astream_message`.
    """
    return await _WORKER.aserve(agent_factory, entry, announce, stop, options)
