"""Building blocks for framework hosts: the one state machine behind every ``handle_message``.

A framework package implements :class:`Host` (and :class:`AsyncHost`) with what differs between
frameworks: :meth:`~Host.load` a thread, report what it :meth:`~Host.waiting` on, whether it
:meth:`~Host.asked` a question before, :meth:`~Host.check` an answer, :meth:`~Host.start`,
:meth:`~Host.resume` (and :meth:`~Host.hold` for frameworks that resume only with every pending
question answered), and ``questions_in``. :func:`handle_message` / :func:`ahandle_message` then
decide and act: start, resume, republish, duplicate, unknown question, invalid answer, held,
publish what the run parked on, and report every answer's outcome to ``answer_handled`` hooks.
:class:`AnswerTrust` is what a host demands of an answer first (a signed token, not late, an
allowed action); every framework's ``handle_message`` takes it as ``trust=``.
:func:`plan` is the decision itself, free of IO. :func:`serve_host` / :func:`aserve_host` run a
framework's ``handle_message`` on every message of an entry point (each framework's ``serve``).
:func:`stream_message` / :func:`astream_message` are ``handle_message`` for a host that streams
the framework's events (a :class:`StreamingHost` yields them, then :class:`Ran` with the result).
Application code does not need this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core._host import (
    AsyncHost,
    AsyncStreamed,
    AsyncStreamingHost,
    Handled,
    Host,
    Message,
    Outcome,
    QuestionNotPending,
    Ran,
    Step,
    Streamed,
    StreamingHost,
    Waiting,
    ahandle_message,
    astream_message,
    handle_message,
    plan,
    stream_message,
)
from agent_wait.core._lazy import lazy_exports
from agent_wait.core._publish import Clock
from agent_wait.core._trust import AnswerTrust

if TYPE_CHECKING:
    from agent_wait.core._worker import aserve_host, serve_host

__all__ = [
    "AnswerTrust",
    "AsyncHost",
    "AsyncStreamed",
    "AsyncStreamingHost",
    "Clock",
    "Handled",
    "Host",
    "Message",
    "Outcome",
    "QuestionNotPending",
    "Ran",
    "Step",
    "Streamed",
    "StreamingHost",
    "Waiting",
    "ahandle_message",
    "aserve_host",
    "astream_message",
    "handle_message",
    "plan",
    "serve_host",
    "stream_message",
]

# The worker loop (and the entry point machinery under it) imports on first use: a host that
# only calls handle_message does not load it.
__getattr__, __dir__ = lazy_exports(
    __name__, {"serve_host": "agent_wait.core._worker", "aserve_host": "agent_wait.core._worker"}
)
