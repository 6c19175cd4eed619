"""agent-wait core: the envelope contract, the policy, publishing and the plugin hooks.

Publish the questions a run parked on::

    from agent_wait.core import Question, WaitPolicy, publish, announcer

    report = publish(
        [Question(question_id="q1", question={"function": "issue_refund", "args": {"amount": 41000}},
                  policy=WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))],
        thread_id="order-4471",
        announce=announcer("sqlite", path="inbox.sqlite3"),
    )
    assert report.ok

Framework packages (``agent-wait-langgraph``, ``agent-wait-pydantic-ai``,
``agent-wait-strands``) build ``@wait`` and ``publish_interrupts`` on
:mod:`agent_wait.core.adapter`, and ``handle_message`` on :mod:`agent_wait.core.host`. Transport packages register announcers through the
``agent_wait`` entry-point group; configure them by name (see docs/configuration.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core._lazy import lazy_exports

if TYPE_CHECKING:
    from agent_wait.core._announce import (
        BaseAnnounce,
        Delivery,
        DeliveryOutcome,
        PublishReport,
        Receipt,
    )
    from agent_wait.core._answer_schema import schema_problem
    from agent_wait.core._answering import (
        ActionNotAllowed,
        AnswerResult,
        AnswersResult,
        NothingToResend,
        QuestionClosed,
        QuestionNotFound,
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
    from agent_wait.core._canonical import canonical_json, derive_question_id, to_jsonable
    from agent_wait.core._closing import Closing
    from agent_wait.core._config import AgentWaitConfig, default_announcers, load_config
    from agent_wait.core._durations import parse_duration
    from agent_wait.core._entries import default_entry, entry
    from agent_wait.core._entry import DeadLetter, EntryPoint, Received
    from agent_wait.core._errors import (
        AgentWaitError,
        AnnounceFailed,
        BatchEntryFailed,
        ConfigError,
        DeliveryFailed,
        InvalidAnswer,
        PluginNotFoundError,
        QuestionNotSendable,
        QuestionTooLarge,
    )
    from agent_wait.core._hooks import Operation
    from agent_wait.core._host import Handled, Outcome
    from agent_wait.core._jsonl import JsonlAnnounce, JsonlOptions
    from agent_wait.core._memory import LogAnnounce, LogOptions, MemoryAnnounce, MemoryOptions
    from agent_wait.core._models import (
        Answer,
        CallContext,
        LifecycleEvent,
        PendingResult,
        Question,
        ReplyWith,
        Source,
        StartMessage,
        WaitEnvelope,
        format_utc,
        is_answer,
        message_warnings,
        parse_message,
    )
    from agent_wait.core._options import AnnouncerOptions, EntryOptions
    from agent_wait.core._plugins import (
        announcer,
        announcers_from_config,
        identity_providers,
        question_store,
    )
    from agent_wait.core._policy import Correlation, WaitPolicy
    from agent_wait.core._publish import ENVELOPE_LIMIT, Announce, apublish, build_envelope, publish
    from agent_wait.core._sqlite import InboxItem, SqliteAnnounce, SqliteInbox, SqliteOptions
    from agent_wait.core._sqlite_entry import SqliteEntry, SqliteEntryOptions
    from agent_wait.core._sqlite_store import SqliteQuestionStore
    from agent_wait.core._storable import storable_problem
    from agent_wait.core._store import (
        HistoryKey,
        QuestionHistory,
        QuestionStatus,
        QuestionStore,
        StoredQuestion,
        Transition,
        check_limit,
        closing_status,
        history_key,
    )
    from agent_wait.core._trust import AnswerTrust
    from agent_wait.core._worker import ServeReport, aserve_entry, serve_entry
    from agent_wait.core.hookspecs import hookimpl

# Every name is imported on first access (PEP 562): `import agent_wait.core` costs almost
# nothing, and a plugin's entry-point module that imports `hookimpl` loads only the hook specs.
_LAZY = {
    "ActionNotAllowed": "._answering",
    "AgentWaitConfig": "._config",
    "AgentWaitError": "._errors",
    "Announce": "._publish",
    "AnnouncerOptions": "._options",
    "AnnounceFailed": "._errors",
    "Answer": "._models",
    "AnswerResult": "._answering",
    "AnswerTrust": "._trust",
    "BaseAnnounce": "._announce",
    "BatchEntryFailed": "._errors",
    "Closing": "._closing",
    "ConfigError": "._errors",
    "Correlation": "._policy",
    "DeadLetter": "._entry",
    "Delivery": "._announce",
    "DeliveryFailed": "._errors",
    "DeliveryOutcome": "._announce",
    "ENVELOPE_LIMIT": "._publish",
    "EntryOptions": "._options",
    "EntryPoint": "._entry",
    "Handled": "._host",
    "InboxItem": "._sqlite",
    "InvalidAnswer": "._errors",
    "JsonlAnnounce": "._jsonl",
    "JsonlOptions": "._jsonl",
    "LogAnnounce": "._memory",
    "LogOptions": "._memory",
    "MemoryAnnounce": "._memory",
    "MemoryOptions": "._memory",
    "NothingToResend": "._answering",
    "Outcome": "._host",
    "PendingResult": "._models",
    "PluginNotFoundError": "._errors",
    "PublishReport": "._announce",
    "Receipt": "._announce",
    "Question": "._models",
    "QuestionClosed": "._answering",
    "QuestionNotFound": "._answering",
    "QuestionStatus": "._store",
    "closing_status": "._store",
    "QuestionStore": "._store",
    "QuestionHistory": "._store",
    "HistoryKey": "._store",
    "history_key": "._store",
    "check_limit": "._store",
    "QuestionNotSendable": "._errors",
    "QuestionTooLarge": "._errors",
    "Received": "._entry",
    "ReplyWith": "._models",
    "ServeReport": "._worker",
    "Source": "._models",
    "SqliteAnnounce": "._sqlite",
    "SqliteEntry": "._sqlite_entry",
    "SqliteEntryOptions": "._sqlite_entry",
    "SqliteInbox": "._sqlite",
    "SqliteOptions": "._sqlite",
    "SqliteQuestionStore": "._sqlite_store",
    "StartMessage": "._models",
    "StoredQuestion": "._store",
    "SweepReport": "._answering",
    "Transition": "._store",
    "WaitEnvelope": "._models",
    "WaitPolicy": "._policy",
    "announcer": "._plugins",
    "announcers_from_config": "._plugins",
    "answer": "._answering",
    "apublish": "._publish",
    "aserve_entry": "._worker",
    "build_envelope": "._publish",
    "cancel": "._answering",
    "canonical_json": "._canonical",
    "default_announcers": "._config",
    "default_approver": "._answering",
    "default_entry": "._entries",
    "default_store": "._answering",
    "derive_question_id": "._canonical",
    "entry": "._entries",
    "format_utc": "._models",
    "hookimpl": ".hookspecs",
    "is_answer": "._models",
    "load_config": "._config",
    "message_warnings": "._models",
    "parse_duration": "._durations",
    "parse_message": "._models",
    "publish": "._publish",
    "resend": "._answering",
    "serve_entry": "._worker",
    "storable_problem": "._storable",
    "sweep": "._answering",
    "to_jsonable": "._canonical",
    "Operation": "._hooks",
    "identity_providers": "._plugins",
    "question_store": "._plugins",
    "configured_store": "._answering",
    "AnswersResult": "._answering",
    "answer_many": "._answering",
    "schema_problem": "._answer_schema",
    "LifecycleEvent": "._models",
    "CallContext": "._models",
}

__all__ = [
    "ENVELOPE_LIMIT",
    "ActionNotAllowed",
    "AgentWaitConfig",
    "AgentWaitError",
    "Announce",
    "AnnounceFailed",
    "AnnouncerOptions",
    "Answer",
    "AnswerResult",
    "AnswerTrust",
    "AnswersResult",
    "BaseAnnounce",
    "BatchEntryFailed",
    "CallContext",
    "Closing",
    "ConfigError",
    "Correlation",
    "DeadLetter",
    "Delivery",
    "DeliveryFailed",
    "DeliveryOutcome",
    "EntryOptions",
    "EntryPoint",
    "Handled",
    "HistoryKey",
    "InboxItem",
    "InvalidAnswer",
    "JsonlAnnounce",
    "JsonlOptions",
    "LifecycleEvent",
    "LogAnnounce",
    "LogOptions",
    "MemoryAnnounce",
    "MemoryOptions",
    "NothingToResend",
    "Operation",
    "Outcome",
    "PendingResult",
    "PluginNotFoundError",
    "PublishReport",
    "Question",
    "QuestionClosed",
    "QuestionHistory",
    "QuestionNotFound",
    "QuestionNotSendable",
    "QuestionStatus",
    "QuestionStore",
    "QuestionTooLarge",
    "Receipt",
    "Received",
    "ReplyWith",
    "ServeReport",
    "Source",
    "SqliteAnnounce",
    "SqliteEntry",
    "SqliteEntryOptions",
    "SqliteInbox",
    "SqliteOptions",
    "SqliteQuestionStore",
    "StartMessage",
    "StoredQuestion",
    "SweepReport",
    "Transition",
    "WaitEnvelope",
    "WaitPolicy",
    "announcer",
    "announcers_from_config",
    "answer",
    "answer_many",
    "apublish",
    "aserve_entry",
    "build_envelope",
    "cancel",
    "canonical_json",
    "check_limit",
    "closing_status",
    "configured_store",
    "default_announcers",
    "default_approver",
    "default_entry",
    "default_store",
    "derive_question_id",
    "entry",
    "format_utc",
    "history_key",
    "hookimpl",
    "identity_providers",
    "is_answer",
    "lazy_exports",
    "load_config",
    "message_warnings",
    "parse_duration",
    "parse_message",
    "publish",
    "question_store",
    "resend",
    "schema_problem",
    "serve_entry",
    "storable_problem",
    "sweep",
    "to_jsonable",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, distribution="agent-wait-core")
