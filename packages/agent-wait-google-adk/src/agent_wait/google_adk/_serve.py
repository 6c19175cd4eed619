"""The Google ADK worker: :func:`handle_message` for every message of an entry point."""

from __future__ import annotations

import asyncio
import threading
from typing import Unpack

from google.adk.runners import Runner

from agent_wait.core import Announce, EntryPoint
from agent_wait.google_adk._host import (
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
)
from agent_wait.host import FrameworkWorker, ServeOptions, ServeReport


class GoogleAdkServeOptions(ServeOptions, total=False):
    """What :func:`serve` and :func:`aserve` take.

    :class:`~agent_wait.host.ServeOptions`, and what :func:`handle_message` (or, with
    ``stream``, :func:`stream_message`) takes.
    """

    user_id: str


_WORKER = FrameworkWorker(
    handle_message, ahandle_message, stream_message, astream_message, GoogleAdkServeOptions
)


def serve(
    runner: Runner,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: threading.Event | None = None,
    **options: Unpack[GoogleAdkServeOptions],
) -> ServeReport:
    """Run a Google ADK host: receive from ``entry``, :func:`handle_message`, acknowledge.

    Each message is handled with ``handle_message(runner, message, announce, strict=True,
    ...)`` and acknowledged only when that returns; a failed publish or any other error leaves
    it to be handed out again, a malformed message is dead-lettered. Messages of one thread are
    never handled at once; different threads run in parallel up to ``concurrency``. SIGTERM or
    SIGINT (or ``stop``) stops receiving; the messages in hand are finished first.

    Args:
        runner: The ADK ``Runner``; its session service keeps every thread (a
            ``DatabaseSessionService`` for threads that outlive the process).
        entry: Where messages come from (default: the configured entry point).
        announce: Announcers for what runs park on (None: the configured default).
        stop: Set it to stop the worker from another thread.
        **options: :class:`GoogleAdkServeOptions`: ``concurrency``, ``wait``, ``health``,
            ``stream`` (``stream(thread_id, event)`` for every ADK event of every run: each
            message is then handled with :func:`stream_message`; a ``stream`` that raises stops
            that run, what ADK stored by then stays in the session), and ``user_id``,
            ``reply_to``, ``clock``, ``trust`` for :func:`handle_message`.

    Raises:
        TypeError: An option it does not take.
    """
    return _WORKER.serve(runner, entry, announce, stop, options)


async def aserve(
    runner: Runner,
    entry: EntryPoint | None = None,
    announce: Announce = None,
    *,
    stop: asyncio.Event | None = None,
    **options: Unpack[GoogleAdkServeOptions],
) -> ServeReport:
    """Async :func:`serve` with :func:`ahandle_message`.

    With ``stream`` (a function or a coroutine function of ``(thread_id, event)``), each
    message is handled with :func:`astream_message`.
    """
    return await _WORKER.aserve(runner, entry, announce, stop, options)
