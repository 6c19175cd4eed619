"""The public API of agent_wait.core is deliberate: additions and removals show up here."""

from __future__ import annotations

import agent_wait.core


def test_public_api() -> None:
    assert sorted(agent_wait.core.__all__) == [
        "ActionNotAllowed",
        "AgentWaitConfig",
        "AgentWaitError",
        "Announce",
        "AnnounceFailed",
        "AnnouncerOptions",
        "Answer",
        "AnswerNotAccepted",
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
        "ENVELOPE_LIMIT",
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
        "RefusalStore",
        "ReplyWith",
        "SendUnconfirmed",
        "SendingStore",
        "ServeReport",
        "ServeStatus",
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
        "answer_problem",
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
        "example_answer",
        "format_utc",
        "history_key",
        "hookimpl",
        "identity_providers",
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
        "resend",
        "schema_problem",
        "sending_status",
        "serve_entry",
        "storable_problem",
        "sweep",
        "to_jsonable",
    ]


def test_adapter_building_blocks_for_frameworks() -> None:
    import agent_wait.core.adapter

    assert sorted(agent_wait.core.adapter.__all__) == [
        "FrameworkAdapter",
        "PAYLOAD_KEY",
        "WaitCall",
        "WaitDecorator",
        "apply_answer",
        "edited_args_schema",
        "make_publish_interrupts",
        "make_wait",
        "question_from_value",
        "wait_payload",
    ]
    for name in agent_wait.core.adapter.__all__:
        assert not hasattr(agent_wait.core, name), f"{name} is adapter-only"


def test_transport_building_blocks_for_plugins() -> None:
    import agent_wait.core.transport

    assert sorted(agent_wait.core.transport.__all__) == [
        "AttributeRules",
        "BatchEntryFailed",
        "ClientAnnounce",
        "ClientPair",
        "EnvelopeTemplate",
        "Exchange",
        "MAX_MESSAGE_BYTES",
        "Poison",
        "RoutingAttributes",
        "check_body_size",
        "chunk",
        "connection_errors",
        "dead_letter",
        "fit_identifier",
        "read_message",
        "transport_headers",
        "utf8_size",
    ]


def test_option_building_blocks_for_plugins() -> None:
    import agent_wait.core.options

    assert sorted(agent_wait.core.options.__all__) == [
        "AnnouncerOptions",
        "Count",
        "Duration",
        "DurationOrZero",
        "EntryOptions",
        "Flag",
        "NotBool",
        "PluginOptions",
        "PositiveCount",
        "REDACTED",
        "Seconds",
        "SecondsOrZero",
        "Sensitive",
        "SensitiveUrl",
        "Text",
        "redact",
    ]


def test_every_public_name_resolves() -> None:
    for name in agent_wait.core.__all__:
        assert getattr(agent_wait.core, name) is not None, name
