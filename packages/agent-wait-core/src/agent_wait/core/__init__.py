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
:func:`make_publish_interrupts`. Transport packages register announcers through the
``agent_wait`` entry-point group; configure them by name (see docs/configuration.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_wait.core._announce import BaseAnnounce, Delivery, DeliveryOutcome, PublishReport
from agent_wait.core._batching import BatchEntryFailed
from agent_wait.core._canonical import canonical_json, derive_question_id, to_jsonable
from agent_wait.core._durations import parse_duration
from agent_wait.core._errors import (
    AgentWaitError,
    AnnounceFailed,
    ConfigError,
    InvalidAnswer,
    PluginNotFoundError,
    QuestionTooLarge,
)
from agent_wait.core._host import Handled, Outcome
from agent_wait.core._memory import LogAnnounce, MemoryAnnounce
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
    parse_message,
)
from agent_wait.core._plugins import announcer, announcers_from_config
from agent_wait.core._policy import Correlation, WaitPolicy
from agent_wait.core._publish import ENVELOPE_LIMIT, Announce, apublish, build_envelope, publish
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
from agent_wait.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from agent_wait.core._config import AgentWaitConfig, default_announcers, load_config
    from agent_wait.core._jsonl import JsonlAnnounce
    from agent_wait.core._sqlite import InboxItem, SqliteAnnounce, SqliteInbox

# Imported on first access: sqlite3 and tomllib stay out of `import agent_wait.core`.
_LAZY = {
    "AgentWaitConfig": "agent_wait.core._config",
    "InboxItem": "agent_wait.core._sqlite",
    "JsonlAnnounce": "agent_wait.core._jsonl",
    "SqliteAnnounce": "agent_wait.core._sqlite",
    "SqliteInbox": "agent_wait.core._sqlite",
    "default_announcers": "agent_wait.core._config",
    "load_config": "agent_wait.core._config",
}

__all__ = [
    "ENVELOPE_LIMIT",
    "PAYLOAD_KEY",
    "AgentWaitConfig",
    "AgentWaitError",
    "Announce",
    "AnnounceFailed",
    "Answer",
    "BaseAnnounce",
    "BatchEntryFailed",
    "ConfigError",
    "Correlation",
    "Delivery",
    "DeliveryOutcome",
    "FrameworkAdapter",
    "Handled",
    "InboxItem",
    "InvalidAnswer",
    "JsonlAnnounce",
    "LogAnnounce",
    "MemoryAnnounce",
    "Outcome",
    "PendingResult",
    "PluginNotFoundError",
    "PublishReport",
    "Question",
    "QuestionTooLarge",
    "ReplyWith",
    "Source",
    "SqliteAnnounce",
    "SqliteInbox",
    "StartMessage",
    "WaitCall",
    "WaitDecorator",
    "WaitEnvelope",
    "WaitPolicy",
    "announcer",
    "announcers_from_config",
    "apply_answer",
    "apublish",
    "build_envelope",
    "canonical_json",
    "default_announcers",
    "derive_question_id",
    "format_utc",
    "hookimpl",
    "is_answer",
    "load_config",
    "make_publish_interrupts",
    "make_wait",
    "parse_duration",
    "parse_message",
    "publish",
    "question_from_value",
    "to_jsonable",
    "wait_payload",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "__version__":
        from importlib.metadata import version

        return version("agent-wait-core")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
