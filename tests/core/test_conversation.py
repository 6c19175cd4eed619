"""The asker's part of a question's context: bounded, shared only inside ``share_messages``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_wait.core import (
    CallContext,
    ContextMessage,
    MemoryAnnounce,
    Question,
    publish,
    started_by,
)
from agent_wait.host import describe_asker, share_messages
from agent_wait.host.adapter import last_messages, with_asker

CHAT = [
    ("user", "hello"),
    ("assistant", "  "),
    ("tool", None),
    ("assistant", "Which order?"),
    ("user", "o-4471, " + "x" * 600),
]


def said(message: tuple[str, str | None]) -> tuple[str, str] | None:
    role, text = message
    return None if text is None else (role, text)


def test_no_message_is_shared_outside_the_block() -> None:
    assert last_messages(CHAT, said) == []
    with share_messages(2):
        assert [m.role for m in last_messages(CHAT, said)] == ["assistant", "user"]
        with share_messages(0):
            assert last_messages(CHAT, said) == []
    assert last_messages(CHAT, said) == []


def test_shared_messages_skip_blank_and_textless_ones_and_are_cut() -> None:
    with share_messages(10):
        shared = last_messages(CHAT, said)
    assert [(m.role, m.text[:12]) for m in shared] == [
        ("user", "hello"),
        ("assistant", "Which order?"),
        ("user", "o-4471, xxxx"),
    ]
    assert len(shared[-1].text) == 500
    assert shared[-1].text.endswith("…")


def test_only_the_messages_needed_are_read() -> None:
    read: list[int] = []

    def reading(index: int) -> tuple[str, str]:
        read.append(index)
        return "user", f"message {index}"

    with share_messages(3):
        assert [m.text for m in last_messages(range(2000), reading)] == [
            "message 1997",
            "message 1998",
            "message 1999",
        ]
    assert read == [1999, 1998, 1997]


@pytest.mark.parametrize("count", [-1, 11, 2.0, True, "3"])
def test_a_count_that_is_not_0_to_10_is_refused_naming_it(count: object) -> None:
    with (
        pytest.raises(
            ValueError,
            match=rf"share_messages: count must be an integer from 0 to 10, got {count!r}",
        ),
        share_messages(count),  # type: ignore[arg-type]
    ):
        pass


def test_the_context_bounds_hold_for_messages_from_any_source() -> None:
    with pytest.raises(ValidationError, match="messages"):
        CallContext(messages=[ContextMessage(role="user", text="hi")] * 11)
    with pytest.raises(ValidationError, match="text"):
        ContextMessage(role="user", text="x" * 501)
    with pytest.raises(ValidationError, match="context: names none of"):
        CallContext()
    assert CallContext(framework="strands").model_dump(mode="json", exclude_defaults=True) == {
        "framework": "strands"
    }


def test_with_asker_keeps_what_the_adapter_said_and_publishes_it() -> None:
    asked = [
        Question(question_id="q1", question=1, context=CallContext(node="review")),
        Question(question_id="q2", question=2),
    ]
    hello = [ContextMessage(role="user", text="hello")]
    told = with_asker(asked, "langgraph", "refunds", hello)
    assert [q.context for q in told] == [
        CallContext(node="review", framework="langgraph", agent="refunds", messages=hello),
        CallContext(framework="langgraph", agent="refunds", messages=hello),
    ]
    with started_by("alice"):
        [envelope, _] = publish(told, "t-1", MemoryAnnounce(), strict=True).envelopes
    assert envelope.to_dict()["context"] == {
        "node": "review",
        "framework": "langgraph",
        "agent": "refunds",
        "messages": [{"role": "user", "text": "hello"}],
    }
    assert describe_asker(envelope) == (
        "agent refunds (LangGraph) · node review · started by alice"
    )
    # An empty agent name is no name.
    assert with_asker(asked[1:], "strands", "")[0].context == CallContext(framework="strands")
