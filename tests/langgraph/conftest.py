"""Fixtures and helpers of the LangGraph tests: a scripted chat model, graphs, an envelope check."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from agent_wait.core import MemoryAnnounce, WaitEnvelope

NOW = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
ENVELOPE_FIELDS = [
    "type",
    "event_id",
    "thread_id",
    "question_id",
    "question",
    "allowed_actions",
    "expires_at",
    "default",
    "answer_ttl",
    "source",
    "reply_to",
    "reply_with",
    "correlation",
    "tags",
]
INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")
ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")


def namespace(*nodes: str) -> re.Pattern[str]:
    """A LangGraph checkpoint namespace through ``nodes``: ``node:<task id>`` joined by ``|``."""
    task = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    return re.compile("|".join(f"{re.escape(node)}:{task}" for node in nodes).replace("|", r"\|"))


class ScriptedChat(FakeMessagesListChatModel):
    """LangChain's list-replaying fake chat model, usable by create_agent (which binds tools).

    ``received`` keeps the messages of every model call: what the model saw.
    """

    received: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChat:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.received.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def calls(*specs: tuple[str, dict[str, Any]]) -> AIMessage:
    """An AIMessage calling the given tools (ids call_0, call_1, ...)."""
    return AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{index}", "type": "tool_call"}
            for index, (name, args) in enumerate(specs)
        ],
    )


def model(*turns: BaseMessage) -> ScriptedChat:
    """A scripted model answering each model turn with the next message."""
    return ScriptedChat(responses=list(turns))


def clock() -> datetime:
    """A fixed "now" for expires_at."""
    return NOW


def check_envelope(
    envelope: WaitEnvelope,
    *,
    thread_id: str,
    question_id: str,
    question: Any,
    allowed_actions: list[str],
    expires_at: str | None = None,
    default: Any = None,
    answer_ttl: str | None = None,
    source: dict[str, Any] | None = None,
    reply_to: dict[str, Any] | None = None,
    correlation: dict[str, Any] | None = None,
    tags: dict[str, str] | None = None,
    answer_schema: dict[str, Any] | None = None,
    context: dict[str, str | re.Pattern[str]] | None = None,
) -> None:
    """Check every field of a published envelope against the message formats, in order.

    ``answer_schema`` and ``context`` are optional: present (last, in that order) only when
    the question has them; a ``@wait`` question (``source`` given) always has its derived
    schema: its actions, and its arguments as ``args``. A ``context`` value may be a pattern (a
    namespace holds task ids).
    """
    data = json.loads(envelope.to_json())
    derived = source is not None and answer_schema is None
    optional = [
        name
        for name, value in (("answer_schema", answer_schema or derived), ("context", context))
        if value
    ]
    assert list(data) == ENVELOPE_FIELDS + optional
    if derived:
        properties = data["answer_schema"]["properties"]
        assert properties["action"] == {"enum": allowed_actions}
        assert list(properties["args"]["properties"]) == list(question["args"])
    else:
        assert data.get("answer_schema") == answer_schema
    if context is not None:
        assert set(data["context"]) == set(context)
        for key, expected in context.items():
            found = data["context"][key]
            assert (
                expected.fullmatch(found) if isinstance(expected, re.Pattern) else found == expected
            ), f"context {key}: {found!r}"
    assert data["type"] == "wait.created"
    assert ULID.match(data["event_id"]), data["event_id"]
    assert data["thread_id"] == thread_id
    assert data["question_id"] == question_id
    assert data["question"] == question
    assert data["allowed_actions"] == allowed_actions
    assert data["expires_at"] == expires_at
    assert data["default"] == default
    assert data["answer_ttl"] == answer_ttl
    assert data["source"] == source
    assert data["reply_to"] == reply_to
    assert data["reply_with"] == {
        "thread_id": thread_id,
        "question_id": question_id,
        "answer": None,
    }
    assert data["correlation"] == correlation
    assert data["tags"] == (tags or {})
    assert envelope.dedupe_key == f"wait.created:{thread_id}:{question_id}"


def answer(envelope: WaitEnvelope, value: Any) -> dict[str, Any]:
    """The consumer's reply: reply_with with the answer set."""
    return {**envelope.reply_with.model_dump(), "answer": value}


@pytest.fixture
def inbox() -> MemoryAnnounce:
    return MemoryAnnounce()
