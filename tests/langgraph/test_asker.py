"""Who asked: the framework, the graph's name and, when shared, the conversation's last messages."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt

from agent_wait.core import (
    ContextMessage,
    MemoryAnnounce,
    Outcome,
    started_by,
)
from agent_wait.host import share_messages
from agent_wait.langgraph import handle_message


def review(state: MessagesState) -> dict[str, Any]:
    interrupt({"refund": "o-4471", "amount": 2500})
    return {}


def graph(name: str | None = None) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    if name is None:
        return builder.compile(checkpointer=InMemorySaver())
    return builder.compile(checkpointer=InMemorySaver(), name=name)


CONVERSATION = [
    HumanMessage("hello"),
    AIMessage([{"type": "text", "text": "Hello, which order is it?"}]),
    HumanMessage("refund o-4471: broken " + "x" * 600),
    AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "c1"}]),
    ToolMessage("found o-4471", tool_call_id="c1"),
]
START_MESSAGE = {"thread_id": "t-1", "input": {"messages": CONVERSATION}}


def test_the_graph_and_framework_are_named_and_messages_shared_only_when_asked() -> None:
    refunds, inbox = graph("refunds"), MemoryAnnounce()
    with started_by("alice@example.com"), share_messages(2):
        assert handle_message(refunds, START_MESSAGE, inbox).outcome is Outcome.STARTED
    [envelope] = inbox.envelopes
    assert envelope.started_by == "alice@example.com"
    context = envelope.context
    assert context is not None
    assert (context.node, context.framework, context.agent) == ("review", "langgraph", "refunds")
    # The user's and the model's text only (tool calls and results left out), cut to 500.
    assert context.messages == [
        ContextMessage(role="assistant", text="Hello, which order is it?"),
        ContextMessage(role="user", text=("refund o-4471: broken " + "x" * 600)[:499] + "…"),
    ]

    # Published again from the checkpoint: shared inside the block, not outside it.
    with share_messages(1):
        again = handle_message(refunds, START_MESSAGE, inbox)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.report is not None
    [shared] = again.report.envelopes
    assert shared.context is not None
    assert shared.context.messages == context.messages[-1:]
    quiet = handle_message(refunds, START_MESSAGE, inbox)
    assert quiet.report is not None
    [republished] = quiet.report.envelopes
    assert republished.context == context.model_copy(update={"messages": []})


def test_a_graph_langgraph_named_for_itself_is_not_shown_as_the_asker() -> None:
    inbox = MemoryAnnounce()
    handle_message(graph(), START_MESSAGE, inbox)
    [envelope] = inbox.envelopes
    assert envelope.context is not None
    assert envelope.context.model_dump(exclude={"namespace"}, exclude_defaults=True) == {
        "node": "review",
        "framework": "langgraph",
    }
    assert envelope.context.namespace is not None
    assert envelope.context.namespace.startswith("review:")
