"""agent-wait host: what runs a parked agent again, for every framework.

The host state machine behind every framework's ``handle_message``, the worker that serves an
entry point (:func:`serve_entry`, :func:`serve_host`), answering (:func:`answer`,
:func:`answer_many`, :func:`resend`, :func:`cancel`, :func:`sweep`), ``@wait``'s building blocks
(:mod:`agent_wait.host.adapter`) and the ``agent-wait`` command. Answer a question::

    from agent_wait.host import answer

    result = answer("a1b2c3d4e5f60718293a4b5c6d7e8f90", "approve", by="alice")

Building blocks for framework hosts:

A framework package implements :class:`Host` (and :class:`AsyncHost`) with what differs between
frameworks: :meth:`~Host.load` a thread, report what it :meth:`~Host.waiting` on, whether it
:meth:`~Host.asked` a question before, :meth:`~Host.check` an answer, :meth:`~Host.start`,
:meth:`~Host.resume` (and :meth:`~Host.hold` for frameworks that resume only with every pending
question answered), and ``questions_in``. :func:`handle_message` / :func:`ahandle_message` then
decide and act: start, resume, republish, duplicate, unknown question, invalid answer, held,
publish what the run parked on, and report every answer's outcome to ``answer_handled`` hooks.
:class:`AnswerTrust` is what a host demands of an answer first (a signed token, not late, an
allowed action); every framework's ``handle_message`` takes it as ``trust=``, among the
:class:`MessageOptions`.
:func:`plan` is the decision itself, free of IO. :func:`serve_host` / :func:`aserve_host` run a
framework's ``handle_message`` on every message of an entry point; :func:`refuse_unknown` is
the ``TypeError`` an entry point raises for an option it does not take; a :class:`FrameworkWorker`
binds a framework's four entry points to them once, and each framework's ``serve`` / ``aserve``
is then one call, taking the :class:`ServeOptions`.
:func:`stream_message` / :func:`astream_message` are ``handle_message`` for a host that streams
the framework's events (a :class:`StreamingHost` yields them, then :class:`Ran` with the result).
A framework without a checkpointer keeps each thread's run in a store of its own; its sqlite
store is a :class:`SqliteThreadTable` (one row per thread, the columns it names).
Application code needs only the answering functions and the worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import Handled, Outcome
from agent_wait.core._lazy import lazy_exports
from agent_wait.core._publish import Clock
from agent_wait.core._trust import AnswerTrust
from agent_wait.host._errors import (
    ActionNotAllowed,
    AlreadyVoted,
    AnswerNotAccepted,
    NothingToResend,
    QuestionClosed,
    QuestionDecided,
    QuestionNotFound,
    QuestionNotPending,
    QuorumNotSupported,
    SendUnconfirmed,
)
from agent_wait.host._host import (
    AsyncHost,
    AsyncStreamed,
    AsyncStreamingHost,
    Host,
    Message,
    MessageOptions,
    Ran,
    Step,
    Streamed,
    StreamingHost,
    Waiting,
    ahandle_message,
    astream_message,
    handle_message,
    plan,
    refuse_unknown,
    stream_message,
)

if TYPE_CHECKING:
    from agent_wait.host._answering import (
        AnswerResult,
        AnswersResult,
        SweepReport,
        answer,
        answer_many,
        cancel,
        configured_store,
        default_approver,
        default_store,
        resend,
        sweep,
    )
    from agent_wait.host._approvers import (
        ApproverConfig,
        approvers_of,
        load_approver_config,
        may_answer,
        may_see,
    )
    from agent_wait.host._asker import FRAMEWORKS, describe_asker
    from agent_wait.host._conversation import share_messages
    from agent_wait.host._thread_table import SqliteThreadTable
    from agent_wait.host._worker import (
        FrameworkWorker,
        ServeOptions,
        ServeReport,
        ServeStatus,
        aserve_entry,
        aserve_host,
        serve_entry,
        serve_host,
    )

__all__ = [
    "FRAMEWORKS",
    "ActionNotAllowed",
    "AlreadyVoted",
    "AnswerNotAccepted",
    "AnswerResult",
    "AnswerTrust",
    "AnswersResult",
    "ApproverConfig",
    "AsyncHost",
    "AsyncStreamed",
    "AsyncStreamingHost",
    "Clock",
    "FrameworkWorker",
    "Handled",
    "Host",
    "Message",
    "MessageOptions",
    "NothingToResend",
    "Outcome",
    "QuestionClosed",
    "QuestionDecided",
    "QuestionNotFound",
    "QuestionNotPending",
    "QuorumNotSupported",
    "Ran",
    "SendUnconfirmed",
    "ServeOptions",
    "ServeReport",
    "ServeStatus",
    "SqliteThreadTable",
    "Step",
    "Streamed",
    "StreamingHost",
    "SweepReport",
    "Waiting",
    "ahandle_message",
    "answer",
    "answer_many",
    "approvers_of",
    "aserve_entry",
    "aserve_host",
    "astream_message",
    "cancel",
    "configured_store",
    "default_approver",
    "default_store",
    "describe_asker",
    "handle_message",
    "load_approver_config",
    "may_answer",
    "may_see",
    "plan",
    "refuse_unknown",
    "resend",
    "serve_entry",
    "serve_host",
    "share_messages",
    "stream_message",
    "sweep",
]

# Answering and the worker loop (and the entry point machinery under it) import on first use: a
# host that only calls handle_message does not load them.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ApproverConfig": "agent_wait.host._approvers",
        "approvers_of": "agent_wait.host._approvers",
        "load_approver_config": "agent_wait.host._approvers",
        "may_answer": "agent_wait.host._approvers",
        "may_see": "agent_wait.host._approvers",
        "share_messages": "agent_wait.host._conversation",
        "FRAMEWORKS": "agent_wait.host._asker",
        "describe_asker": "agent_wait.host._asker",
        "AnswerResult": "agent_wait.host._answering",
        "AnswersResult": "agent_wait.host._answering",
        "SweepReport": "agent_wait.host._answering",
        "answer": "agent_wait.host._answering",
        "answer_many": "agent_wait.host._answering",
        "cancel": "agent_wait.host._answering",
        "configured_store": "agent_wait.host._answering",
        "default_approver": "agent_wait.host._answering",
        "default_store": "agent_wait.host._answering",
        "resend": "agent_wait.host._answering",
        "sweep": "agent_wait.host._answering",
        "SqliteThreadTable": "agent_wait.host._thread_table",
        "FrameworkWorker": "agent_wait.host._worker",
        "ServeOptions": "agent_wait.host._worker",
        "ServeReport": "agent_wait.host._worker",
        "ServeStatus": "agent_wait.host._worker",
        "aserve_entry": "agent_wait.host._worker",
        "aserve_host": "agent_wait.host._worker",
        "serve_entry": "agent_wait.host._worker",
        "serve_host": "agent_wait.host._worker",
    },
    distribution="agent-wait-host",
)
