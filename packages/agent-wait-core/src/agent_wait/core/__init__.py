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
``agent-wait-strands``) build ``@wait`` and ``publish_interrupts`` on :func:`make_wait` and
:func:`make_publish_interrupts`, and ``handle_message`` on :mod:`agent_wait.core.host`. Transport packages register announcers through the
``agent_wait`` entry-point group; configure them by name (see docs/configuration.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_wait.core._announce import (
        BaseAnnounce,
        Delivery,
        DeliveryOutcome,
        PublishReport,
        Receipt,
    )
    from agent_wait.core._answering import (
        ActionNotAllowed,
        AnswerResult,
        NothingToResend,
        QuestionClosed,
        QuestionNotFound,
        SweepReport,
        answer,
        cancel,
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
        QuestionTooLarge,
    )
    from agent_wait.core._hooks import Operation
    from agent_wait.core._host import Handled, Outcome
    from agent_wait.core._jsonl import JsonlAnnounce, JsonlOptions
    from agent_wait.core._memory import LogAnnounce, LogOptions, MemoryAnnounce, MemoryOptions
    from agent_wait.core._models import (
        Answer,
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
    from agent_wait.core._options import AnnouncerOptions
    from agent_wait.core._plugins import announcer, announcers_from_config
    from agent_wait.core._policy import Correlation, WaitPolicy
    from agent_wait.core._publish import ENVELOPE_LIMIT, Announce, apublish, build_envelope, publish
    from agent_wait.core._sqlite import InboxItem, SqliteAnnounce, SqliteInbox, SqliteOptions
    from agent_wait.core._sqlite_entry import SqliteEntry
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
    from agent_wait.core._wait import (
        PAYLOAD_KEY,
        FrameworkAdapter,
        WaitCall,
        WaitDecorator,
        apply_answer,
        make_publish_interrupts,
        make_wait,
        question_from_value,
        wait_payload,
    )
    from agent_wait.core._worker import ServeReport, aserve_entry, serve_entry
    from agent_wait.core.hookspecs import hookimpl

# Every name is imported on first access (PEP 562): `import agent_wait.core` costs almost
# nothing, and a plugin's entry-point module that imports `hookimpl` loads only the hook specs.
_LAZY = {
    "ActionNotAllowed": "agent_wait.core._answering",
    "AgentWaitConfig": "agent_wait.core._config",
    "AgentWaitError": "agent_wait.core._errors",
    "Announce": "agent_wait.core._publish",
    "AnnouncerOptions": "agent_wait.core._options",
    "AnnounceFailed": "agent_wait.core._errors",
    "Answer": "agent_wait.core._models",
    "AnswerResult": "agent_wait.core._answering",
    "AnswerTrust": "agent_wait.core._trust",
    "BaseAnnounce": "agent_wait.core._announce",
    "BatchEntryFailed": "agent_wait.core._errors",
    "Closing": "agent_wait.core._closing",
    "ConfigError": "agent_wait.core._errors",
    "Correlation": "agent_wait.core._policy",
    "DeadLetter": "agent_wait.core._entry",
    "Delivery": "agent_wait.core._announce",
    "DeliveryFailed": "agent_wait.core._errors",
    "DeliveryOutcome": "agent_wait.core._announce",
    "ENVELOPE_LIMIT": "agent_wait.core._publish",
    "EntryPoint": "agent_wait.core._entry",
    "FrameworkAdapter": "agent_wait.core._wait",
    "Handled": "agent_wait.core._host",
    "InboxItem": "agent_wait.core._sqlite",
    "InvalidAnswer": "agent_wait.core._errors",
    "JsonlAnnounce": "agent_wait.core._jsonl",
    "JsonlOptions": "agent_wait.core._jsonl",
    "LogAnnounce": "agent_wait.core._memory",
    "LogOptions": "agent_wait.core._memory",
    "MemoryAnnounce": "agent_wait.core._memory",
    "Operation": "agent_wait.core._hooks",
    "MemoryOptions": "agent_wait.core._memory",
    "NothingToResend": "agent_wait.core._answering",
    "Outcome": "agent_wait.core._host",
    "PAYLOAD_KEY": "agent_wait.core._wait",
    "PendingResult": "agent_wait.core._models",
    "PluginNotFoundError": "agent_wait.core._errors",
    "PublishReport": "agent_wait.core._announce",
    "Receipt": "agent_wait.core._announce",
    "Question": "agent_wait.core._models",
    "QuestionClosed": "agent_wait.core._answering",
    "QuestionNotFound": "agent_wait.core._answering",
    "QuestionStatus": "agent_wait.core._store",
    "closing_status": "agent_wait.core._store",
    "QuestionStore": "agent_wait.core._store",
    "QuestionHistory": "agent_wait.core._store",
    "HistoryKey": "agent_wait.core._store",
    "history_key": "agent_wait.core._store",
    "check_limit": "agent_wait.core._store",
    "QuestionTooLarge": "agent_wait.core._errors",
    "Received": "agent_wait.core._entry",
    "ReplyWith": "agent_wait.core._models",
    "ServeReport": "agent_wait.core._worker",
    "Source": "agent_wait.core._models",
    "SqliteAnnounce": "agent_wait.core._sqlite",
    "SqliteEntry": "agent_wait.core._sqlite_entry",
    "SqliteInbox": "agent_wait.core._sqlite",
    "SqliteOptions": "agent_wait.core._sqlite",
    "SqliteQuestionStore": "agent_wait.core._sqlite_store",
    "StartMessage": "agent_wait.core._models",
    "StoredQuestion": "agent_wait.core._store",
    "SweepReport": "agent_wait.core._answering",
    "Transition": "agent_wait.core._store",
    "WaitCall": "agent_wait.core._wait",
    "WaitDecorator": "agent_wait.core._wait",
    "WaitEnvelope": "agent_wait.core._models",
    "WaitPolicy": "agent_wait.core._policy",
    "announcer": "agent_wait.core._plugins",
    "announcers_from_config": "agent_wait.core._plugins",
    "answer": "agent_wait.core._answering",
    "apply_answer": "agent_wait.core._wait",
    "apublish": "agent_wait.core._publish",
    "aserve_entry": "agent_wait.core._worker",
    "build_envelope": "agent_wait.core._publish",
    "cancel": "agent_wait.core._answering",
    "canonical_json": "agent_wait.core._canonical",
    "default_announcers": "agent_wait.core._config",
    "default_approver": "agent_wait.core._answering",
    "default_entry": "agent_wait.core._entries",
    "default_store": "agent_wait.core._answering",
    "derive_question_id": "agent_wait.core._canonical",
    "entry": "agent_wait.core._entries",
    "format_utc": "agent_wait.core._models",
    "hookimpl": "agent_wait.core.hookspecs",
    "is_answer": "agent_wait.core._models",
    "load_config": "agent_wait.core._config",
    "make_publish_interrupts": "agent_wait.core._wait",
    "make_wait": "agent_wait.core._wait",
    "message_warnings": "agent_wait.core._models",
    "parse_duration": "agent_wait.core._durations",
    "parse_message": "agent_wait.core._models",
    "publish": "agent_wait.core._publish",
    "question_from_value": "agent_wait.core._wait",
    "resend": "agent_wait.core._answering",
    "serve_entry": "agent_wait.core._worker",
    "storable_problem": "agent_wait.core._storable",
    "sweep": "agent_wait.core._answering",
    "to_jsonable": "agent_wait.core._canonical",
    "wait_payload": "agent_wait.core._wait",
}

__all__ = [
    "ENVELOPE_LIMIT",
    "PAYLOAD_KEY",
    "ActionNotAllowed",
    "AgentWaitConfig",
    "AgentWaitError",
    "Announce",
    "AnnounceFailed",
    "AnnouncerOptions",
    "Answer",
    "AnswerResult",
    "AnswerTrust",
    "BaseAnnounce",
    "BatchEntryFailed",
    "Closing",
    "ConfigError",
    "Correlation",
    "DeadLetter",
    "Delivery",
    "DeliveryFailed",
    "DeliveryOutcome",
    "EntryPoint",
    "FrameworkAdapter",
    "Handled",
    "HistoryKey",
    "InboxItem",
    "InvalidAnswer",
    "JsonlAnnounce",
    "JsonlOptions",
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
    "SqliteInbox",
    "SqliteOptions",
    "SqliteQuestionStore",
    "StartMessage",
    "StoredQuestion",
    "SweepReport",
    "Transition",
    "WaitCall",
    "WaitDecorator",
    "WaitEnvelope",
    "WaitPolicy",
    "announcer",
    "announcers_from_config",
    "answer",
    "apply_answer",
    "apublish",
    "aserve_entry",
    "build_envelope",
    "cancel",
    "canonical_json",
    "check_limit",
    "closing_status",
    "default_announcers",
    "default_approver",
    "default_entry",
    "default_store",
    "derive_question_id",
    "entry",
    "format_utc",
    "history_key",
    "hookimpl",
    "is_answer",
    "load_config",
    "make_publish_interrupts",
    "make_wait",
    "message_warnings",
    "parse_duration",
    "parse_message",
    "publish",
    "question_from_value",
    "resend",
    "serve_entry",
    "storable_problem",
    "sweep",
    "to_jsonable",
    "wait_payload",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    if name == "__version__":
        from importlib.metadata import version

        return version("agent-wait-core")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
