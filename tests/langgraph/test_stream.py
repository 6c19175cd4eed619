"""stream_message / astream_message: the host over graph.stream, with the chunks as they come."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.langgraph import astream_message, stream_message, wait
from tests.langgraph.conftest import answer, calls, model
from tests.langgraph.test_host import START_MESSAGE, UNASKED, Counts, refund_graph


def refund_agent(runs: list[str]) -> Any:
    @tool
    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        runs.append(order_id)
        return f"refunded {amount}"

    script = model(
        calls(("issue_refund", {"order_id": "order-4471", "amount": 41000})),
        AIMessage("refund issued"),
    )
    return create_agent(script, [issue_refund], checkpointer=InMemorySaver())


def test_updates_stream_parks_publishes_and_resumes(inbox: MemoryAnnounce) -> None:
    counts = Counts()
    graph = refund_graph(counts)

    started = stream_message(graph, START_MESSAGE, inbox, stream_mode="updates")
    chunks = list(started)
    # The interrupt shows in the stream as LangGraph streams it; the question is published.
    assert [next(iter(c)) for c in chunks] == ["__interrupt__"]
    assert started.handled.outcome is Outcome.STARTED
    [envelope] = started.handled.report.envelopes
    assert envelope.question == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
    }
    assert inbox.question_ids == [envelope.question_id]

    # A redelivered start streams nothing and republishes.
    again = stream_message(graph, START_MESSAGE, inbox, stream_mode="updates")
    assert list(again) == []
    assert again.handled.outcome is Outcome.REPUBLISHED

    resumed = stream_message(
        graph, answer(envelope, {"action": "approve"}), inbox, stream_mode="values"
    )
    values = list(resumed)  # the state after each step
    assert values[-1]["result"] == "refunded 41000 on order-4471"
    assert resumed.handled.outcome is Outcome.RESUMED
    assert not resumed.handled.parked
    assert counts.body == 1

    # A duplicate answer streams nothing and runs nothing.
    late = stream_message(graph, answer(envelope, {"action": "approve"}), inbox)
    assert list(late) == []
    assert late.handled.outcome is Outcome.DUPLICATE
    assert counts.body == 1

    unknown = stream_message(
        graph, {"thread_id": "order-4471", "question_id": UNASKED, "answer": 1}, inbox
    )
    assert list(unknown) == []
    assert unknown.handled.outcome is Outcome.UNKNOWN_QUESTION


def test_handled_before_the_stream_ends_is_an_error(inbox: MemoryAnnounce) -> None:
    run = stream_message(refund_graph(Counts()), START_MESSAGE, inbox)
    with pytest.raises(RuntimeError, match="iterate the streamed run to its end"):
        run.handled  # noqa: B018 - the property raises
    assert inbox.envelopes == []  # nothing ran before the iteration


async def test_create_agent_streams_messages_async(inbox: MemoryAnnounce) -> None:
    runs: list[str] = []
    agent = refund_agent(runs)
    start = {"thread_id": "t-1", "input": {"messages": [("user", "refund order-4471")]}}

    started = astream_message(agent, start, inbox, stream_mode="messages")
    tokens = [item async for item in started]
    assert started.handled.outcome is Outcome.STARTED
    assert any(isinstance(message, AIMessageChunk | AIMessage) for message, _ in tokens)
    [envelope] = started.handled.report.envelopes
    assert envelope.question["function"] == "issue_refund"
    assert runs == []

    resumed = astream_message(
        agent, answer(envelope, {"action": "approve"}), inbox, stream_mode="messages"
    )
    texts = [message.content async for message, _ in resumed]
    assert resumed.handled.outcome is Outcome.RESUMED
    assert "refund issued" in texts
    assert runs == ["order-4471"]
