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
:mod:`agent_wait.host.adapter`, and ``handle_message`` on :mod:`agent_wait.host` (the
``agent-wait-host`` distribution, with answering, the worker and the ``agent-wait`` CLI).
Transport packages register announcers through the ``agent_wait`` entry-point group; configure
them by name (see docs/configuration.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_wait.core._lazy import forward, lazy_exports

if TYPE_CHECKING:
    from agent_wait.core._announce import (
        BaseAnnounce,
        Delivery,
        DeliveryOutcome,
        PublishReport,
        Receipt,
    )
    from agent_wait.core._answer_schema import answer_problem, example_answer, schema_problem
    from agent_wait.core._audit import (
        AuditEntry,
        AuditLog,
        SqliteAuditLog,
        audit_log_of,
        chained,
        verify,
    )
    from agent_wait.core._canonical import canonical_json, derive_question_id, to_jsonable
    from agent_wait.core._closing import Closing
    from agent_wait.core._config import (
        AgentWaitConfig,
        configured_ledger,
        default_announcers,
        load_config,
    )
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
        NotAnApprover,
        PluginNotFoundError,
        QuestionNotSendable,
        QuestionTooLarge,
    )
    from agent_wait.core._hooks import Operation
    from agent_wait.core._identity import Identity
    from agent_wait.core._jsonl import JsonlAnnounce, JsonlOptions
    from agent_wait.core._ledger import Execution, ExecutionLedger, SqliteLedger
    from agent_wait.core._logsafe import log_safe
    from agent_wait.core._memory import LogAnnounce, LogOptions, MemoryAnnounce, MemoryOptions
    from agent_wait.core._models import (
        FOLLOW_UP_TYPES,
        Answer,
        CallContext,
        ContextMessage,
        FollowUp,
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
        execution_ledger,
        identity_providers,
        inbox_routes,
        question_store,
    )
    from agent_wait.core._policy import Correlation, Escalation, WaitPolicy
    from agent_wait.core._publish import (
        ENVELOPE_LIMIT,
        Announce,
        apublish,
        build_envelope,
        publish,
        started_by,
    )
    from agent_wait.core._quorum import Quorum, Tally
    from agent_wait.core._reports import Handled, Outcome, WorkerStatus
    from agent_wait.core._sqlite import InboxItem, SqliteAnnounce, SqliteInbox, SqliteOptions
    from agent_wait.core._sqlite_entry import SqliteEntry, SqliteEntryOptions
    from agent_wait.core._sqlite_store import SqliteQuestionStore
    from agent_wait.core._storable import storable_problem
    from agent_wait.core._store import (
        FollowUpQuery,
        FollowUpStore,
        HistoryKey,
        QuestionHistory,
        QuestionStatus,
        QuestionStore,
        RefusalStore,
        SendingStore,
        StoredQuestion,
        Transition,
        VotingStore,
        check_limit,
        check_vote,
        closing_status,
        follow_up_step,
        history_key,
        refusal_note,
        refused_here,
        sending_status,
    )
    from agent_wait.core._summary import (
        Deadline,
        brief,
        call_summary,
        describe_deadline,
    )
    from agent_wait.core._trust import AnswerTrust
    from agent_wait.core.hookspecs import hookimpl

# Every name is imported on first access (PEP 562): `import agent_wait.core` costs almost
# nothing, and a plugin's entry-point module that imports `hookimpl` loads only the hook specs.
_LAZY = {
    "AgentWaitConfig": "._config",
    "AgentWaitError": "._errors",
    "Announce": "._publish",
    "AnnouncerOptions": "._options",
    "AnnounceFailed": "._errors",
    "Answer": "._models",
    "AnswerTrust": "._trust",
    "BaseAnnounce": "._announce",
    "BatchEntryFailed": "._errors",
    "Closing": "._closing",
    "ConfigError": "._errors",
    "Correlation": "._policy",
    "Escalation": "._policy",
    "FOLLOW_UP_TYPES": "._models",
    "FollowUp": "._models",
    "FollowUpQuery": "._store",
    "FollowUpStore": "._store",
    "follow_up_step": "._store",
    "DeadLetter": "._entry",
    "Delivery": "._announce",
    "DeliveryFailed": "._errors",
    "DeliveryOutcome": "._announce",
    "ENVELOPE_LIMIT": "._publish",
    "EntryOptions": "._options",
    "EntryPoint": "._entry",
    "Handled": "._reports",
    "InboxItem": "._sqlite",
    "InvalidAnswer": "._errors",
    "JsonlAnnounce": "._jsonl",
    "JsonlOptions": "._jsonl",
    "LogAnnounce": "._memory",
    "LogOptions": "._memory",
    "MemoryAnnounce": "._memory",
    "MemoryOptions": "._memory",
    "Outcome": "._reports",
    "PendingResult": "._models",
    "PluginNotFoundError": "._errors",
    "PublishReport": "._announce",
    "Receipt": "._announce",
    "Question": "._models",
    "SendingStore": "._store",
    "RefusalStore": "._store",
    "refusal_note": "._store",
    "refused_here": "._store",
    "sending_status": "._store",
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
    "Source": "._models",
    "SqliteAnnounce": "._sqlite",
    "SqliteEntry": "._sqlite_entry",
    "SqliteEntryOptions": "._sqlite_entry",
    "SqliteInbox": "._sqlite",
    "SqliteOptions": "._sqlite",
    "SqliteQuestionStore": "._sqlite_store",
    "StartMessage": "._models",
    "StoredQuestion": "._store",
    "Transition": "._store",
    "WaitEnvelope": "._models",
    "WaitPolicy": "._policy",
    "WorkerStatus": "._reports",
    "announcer": "._plugins",
    "announcers_from_config": "._plugins",
    "apublish": "._publish",
    "build_envelope": "._publish",
    "canonical_json": "._canonical",
    "default_announcers": "._config",
    "default_entry": "._entries",
    "derive_question_id": "._canonical",
    "entry": "._entries",
    "format_utc": "._models",
    "brief": "._summary",
    "call_summary": "._summary",
    "describe_deadline": "._summary",
    "Deadline": "._summary",
    "hookimpl": ".hookspecs",
    "is_answer": "._models",
    "load_config": "._config",
    "log_safe": "._logsafe",
    "message_warnings": "._models",
    "parse_duration": "._durations",
    "parse_message": "._models",
    "publish": "._publish",
    "storable_problem": "._storable",
    "to_jsonable": "._canonical",
    "Operation": "._hooks",
    "identity_providers": "._plugins",
    "inbox_routes": "._plugins",
    "question_store": "._plugins",
    "execution_ledger": "._plugins",
    "Execution": "._ledger",
    "ExecutionLedger": "._ledger",
    "SqliteLedger": "._ledger",
    "configured_ledger": "._config",
    "schema_problem": "._answer_schema",
    "answer_problem": "._answer_schema",
    "example_answer": "._answer_schema",
    "LifecycleEvent": "._models",
    "CallContext": "._models",
    "ContextMessage": "._models",
    "NotAnApprover": "._errors",
    "Identity": "._identity",
    "started_by": "._publish",
    "Quorum": "._quorum",
    "AuditEntry": "._audit",
    "AuditLog": "._audit",
    "SqliteAuditLog": "._audit",
    "chained": "._audit",
    "audit_log_of": "._audit",
    "verify": "._audit",
    "Tally": "._quorum",
    "VotingStore": "._store",
    "check_vote": "._store",
}

__all__ = [
    "ENVELOPE_LIMIT",
    "FOLLOW_UP_TYPES",
    "AgentWaitConfig",
    "AgentWaitError",
    "Announce",
    "AnnounceFailed",
    "AnnouncerOptions",
    "Answer",
    "AnswerTrust",
    "AuditEntry",
    "AuditLog",
    "BaseAnnounce",
    "BatchEntryFailed",
    "CallContext",
    "Closing",
    "ConfigError",
    "ContextMessage",
    "Correlation",
    "DeadLetter",
    "Deadline",
    "Delivery",
    "DeliveryFailed",
    "DeliveryOutcome",
    "EntryOptions",
    "EntryPoint",
    "Escalation",
    "Execution",
    "ExecutionLedger",
    "FollowUp",
    "FollowUpQuery",
    "FollowUpStore",
    "Handled",
    "HistoryKey",
    "Identity",
    "InboxItem",
    "InvalidAnswer",
    "JsonlAnnounce",
    "JsonlOptions",
    "LifecycleEvent",
    "LogAnnounce",
    "LogOptions",
    "MemoryAnnounce",
    "MemoryOptions",
    "NotAnApprover",
    "Operation",
    "Outcome",
    "PendingResult",
    "PluginNotFoundError",
    "PublishReport",
    "Question",
    "QuestionHistory",
    "QuestionNotSendable",
    "QuestionStatus",
    "QuestionStore",
    "QuestionTooLarge",
    "Quorum",
    "Receipt",
    "Received",
    "RefusalStore",
    "ReplyWith",
    "SendingStore",
    "Source",
    "SqliteAnnounce",
    "SqliteAuditLog",
    "SqliteEntry",
    "SqliteEntryOptions",
    "SqliteInbox",
    "SqliteLedger",
    "SqliteOptions",
    "SqliteQuestionStore",
    "StartMessage",
    "StoredQuestion",
    "Tally",
    "Transition",
    "VotingStore",
    "WaitEnvelope",
    "WaitPolicy",
    "WorkerStatus",
    "announcer",
    "announcers_from_config",
    "answer_problem",
    "apublish",
    "audit_log_of",
    "brief",
    "build_envelope",
    "call_summary",
    "canonical_json",
    "chained",
    "check_limit",
    "check_vote",
    "closing_status",
    "configured_ledger",
    "default_announcers",
    "default_entry",
    "derive_question_id",
    "describe_deadline",
    "entry",
    "example_answer",
    "execution_ledger",
    "follow_up_step",
    "format_utc",
    "history_key",
    "hookimpl",
    "identity_providers",
    "inbox_routes",
    "is_answer",
    "lazy_exports",
    "load_config",
    "log_safe",
    "message_warnings",
    "parse_duration",
    "parse_message",
    "publish",
    "question_store",
    "refusal_note",
    "refused_here",
    "schema_problem",
    "sending_status",
    "started_by",
    "storable_problem",
    "to_jsonable",
    "verify",
]


_lazy_getattr, __dir__ = lazy_exports(__name__, _LAZY, distribution="agent-wait-core")

# Names that moved to agent-wait-host. They still resolve here for one release, with a
# DeprecationWarning naming the new import, and are loaded by name so core has no dependency on
# the host distribution.
_MOVED: dict[str, str] = dict.fromkeys(
    (
        "ActionNotAllowed",
        "AnswerNotAccepted",
        "ApproverConfig",
        "AnswerResult",
        "AnswersResult",
        "NothingToResend",
        "QuestionClosed",
        "QuestionNotFound",
        "SendUnconfirmed",
        "ServeReport",
        "ServeStatus",
        "SweepReport",
        "answer",
        "answer_many",
        "approvers_of",
        "aserve_entry",
        "cancel",
        "configured_store",
        "default_approver",
        "default_store",
        "load_approver_config",
        "may_answer",
        "may_see",
        "resend",
        "serve_entry",
        "share_messages",
        "sweep",
    ),
    "agent_wait.host",
)
# Building blocks of framework adapters.
_MOVED.update(dict.fromkeys(("last_messages", "with_asker"), "agent_wait.host.adapter"))


def __getattr__(name: str) -> Any:
    home = _MOVED.get(name)
    if home is None:
        return _lazy_getattr(name)
    return forward(f"{__name__}.{name}", home, name, distribution="agent-wait-host")
