"""Who asked: the framework, the agent's name and, when shared, the conversation's last messages."""

from __future__ import annotations

from pathlib import Path

from strands import Agent, ToolContext, tool
from strands.session import FileSessionManager

from agent_wait.core import (
    CallContext,
    ContextMessage,
    MemoryAnnounce,
    Outcome,
    WaitPolicy,
    started_by,
)
from agent_wait.host import share_messages
from agent_wait.strands import handle_message, wait
from tests.strands.fake_model import Call, ScriptedModel


@tool(context=True)
@wait(WaitPolicy(timeout="P3D"))
def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
    """Refund an order."""
    return f"refunded {amount} on {order_id}"


class Desk:
    """A thread's agent on its stored session; ``model`` is the one the next build gets."""

    def __init__(self, sessions: Path, name: str | None) -> None:
        self.sessions = sessions
        self.name = name
        self.model = ScriptedModel("Hello, which order is it?")

    def __call__(self, thread_id: str) -> Agent:
        return Agent(
            model=self.model,
            name=self.name,
            tools=[issue_refund],
            session_manager=FileSessionManager(
                session_id=thread_id, storage_dir=str(self.sessions)
            ),
            callback_handler=None,
        )


def converse(desk: Desk, inbox: MemoryAnnounce) -> None:
    """A greeting and its reply, then a refund request the model calls the tool for."""
    greeted = handle_message(desk, {"thread_id": "t-1", "input": "hello"}, inbox)
    assert greeted.report is not None
    assert greeted.report.envelopes == ()
    desk.model = ScriptedModel([Call("issue_refund", {"order_id": "o-4471", "amount": 2500})])
    asked = handle_message(desk, {"thread_id": "t-1", "input": "refund o-4471: broken"}, inbox)
    assert asked.outcome is Outcome.STARTED


def test_the_agent_and_framework_are_named_and_messages_shared_only_when_asked(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    desk = Desk(sessions, "refunds")
    with started_by("alice@example.com"), share_messages(3):
        converse(desk, inbox)
    [envelope] = inbox.envelopes
    assert envelope.started_by == "alice@example.com"
    assert envelope.context == CallContext(
        tool="issue_refund",
        tool_call_id="call_3_0",
        framework="strands",
        agent="refunds",
        messages=[
            ContextMessage(role="user", text="hello"),
            ContextMessage(role="assistant", text="Hello, which order is it?"),
            ContextMessage(role="user", text="refund o-4471: broken"),
        ],
    )

    # Published again outside the block: the asker still, the conversation not.
    again = handle_message(desk, {"thread_id": "t-1", "input": "refund o-4471: broken"}, inbox)
    assert again.outcome is Outcome.REPUBLISHED
    [republished] = again.report.envelopes if again.report else []
    assert republished.context == CallContext(
        tool="issue_refund", tool_call_id="call_3_0", framework="strands", agent="refunds"
    )


def test_an_agent_strands_named_for_itself_is_not_shown_as_the_asker(
    sessions: Path, inbox: MemoryAnnounce
) -> None:
    with share_messages(1):
        converse(Desk(sessions, None), inbox)
    [envelope] = inbox.envelopes
    assert envelope.context is not None
    assert (envelope.context.framework, envelope.context.agent) == ("strands", None)
    assert envelope.context.messages == [ContextMessage(role="user", text="refund o-4471: broken")]
