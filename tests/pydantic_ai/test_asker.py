"""Who asked: the framework, the agent's name and, when shared, the conversation's last messages."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_wait.core import (
    CallContext,
    ContextMessage,
    MemoryAnnounce,
    Outcome,
    WaitPolicy,
    started_by,
)
from agent_wait.host import share_messages
from agent_wait.pydantic_ai import InMemoryHistory, handle_message, wait


def desk(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Greets back; asked for a refund, says so and calls the refund tool; then reports."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    prompt = next((p.content for p in last.parts if p.part_kind == "user-prompt"), None)
    if prompt == "hello":
        return ModelResponse(parts=[TextPart("Hello, which order is it?")])
    if isinstance(prompt, str):
        call = ToolCallPart("issue_refund", {"order_id": "o-4471", "amount": 2500}, "call-1")
        return ModelResponse(parts=[TextPart("I will refund 2,500 on o-4471."), call])
    return ModelResponse(parts=[TextPart("done")])


def refunds(name: str | None) -> Agent[Any, Any]:
    agent = Agent(FunctionModel(desk), name=name, output_type=[str, DeferredToolRequests])

    @agent.tool
    @wait(WaitPolicy(timeout="P3D"))
    def issue_refund(ctx: RunContext[Any], order_id: str, amount: int) -> str:
        return f"refunded {amount} on {order_id}"

    return agent


def converse(agent: Agent[Any, Any], history: InMemoryHistory, inbox: MemoryAnnounce) -> None:
    greeted = handle_message(agent, {"thread_id": "t-1", "input": "hello"}, inbox, history=history)
    assert greeted.outcome is Outcome.STARTED
    asked = handle_message(
        agent, {"thread_id": "t-1", "input": "refund o-4471: broken"}, inbox, history=history
    )
    assert asked.outcome is Outcome.STARTED


def test_the_agent_and_framework_are_named_and_messages_shared_only_when_asked(
    inbox: MemoryAnnounce,
) -> None:
    agent, history = refunds("refunds"), InMemoryHistory()
    with started_by("alice@example.com"), share_messages(3):
        converse(agent, history, inbox)
    [envelope] = inbox.envelopes
    assert envelope.started_by == "alice@example.com"
    assert envelope.context == CallContext(
        tool="issue_refund",
        tool_call_id="call-1",
        framework="pydantic_ai",
        agent="refunds",
        messages=[
            ContextMessage(role="assistant", text="Hello, which order is it?"),
            ContextMessage(role="user", text="refund o-4471: broken"),
            ContextMessage(role="assistant", text="I will refund 2,500 on o-4471."),
        ],
    )

    # Published again outside the block: the asker still, the conversation not.
    again = handle_message(
        agent, {"thread_id": "t-1", "input": "refund o-4471: broken"}, inbox, history=history
    )
    assert again.outcome is Outcome.REPUBLISHED
    assert again.report is not None
    [republished] = again.report.envelopes
    assert republished.context == CallContext(
        tool="issue_refund", tool_call_id="call-1", framework="pydantic_ai", agent="refunds"
    )


def test_without_a_name_the_framework_is_still_told(inbox: MemoryAnnounce) -> None:
    converse(refunds(None), InMemoryHistory(), inbox)
    [envelope] = inbox.envelopes
    assert envelope.context == CallContext(
        tool="issue_refund", tool_call_id="call-1", framework="pydantic_ai"
    )
