"""astream_message: the Pydantic AI host over run_stream_events, with the events as they come."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic_ai import AgentRunResultEvent, DeferredToolRequests
from pydantic_ai.messages import FunctionToolCallEvent, FunctionToolResultEvent

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.pydantic_ai import InMemoryHistory, astream_message
from tests.pydantic_ai.scripted import Script, seen_by_model
from tests.pydantic_ai.test_host import REFUND, START, Refunds, answer


async def test_stream_parks_publishes_holds_and_resumes(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    refunds = Refunds(script(REFUND))
    history = InMemoryHistory()

    started = astream_message(refunds.agent, START, inbox, history=history)
    events: list[Any] = [event async for event in started]
    assert isinstance(events[-1], AgentRunResultEvent)
    assert isinstance(events[-1].result.output, DeferredToolRequests)
    assert any(isinstance(e, FunctionToolCallEvent) for e in events)
    assert started.handled.outcome is Outcome.STARTED
    assert started.handled.question_ids == ["issue_refund-1-0"]
    assert refunds.runs == []

    again = astream_message(refunds.agent, START, inbox, history=history)
    assert [event async for event in again] == []
    assert again.handled.outcome is Outcome.REPUBLISHED

    resumed = astream_message(
        refunds.agent, answer("issue_refund-1-0", {"action": "approve"}), inbox, history=history
    )
    events = [event async for event in resumed]
    assert resumed.handled.outcome is Outcome.RESUMED
    assert any(isinstance(e, FunctionToolResultEvent) for e in events)
    assert refunds.runs == [{"order_id": "order-4471", "amount": 41000}]
    seen = seen_by_model(resumed.handled.result.output)
    assert seen["issue_refund-1-0"]["content"] == "refunded 41000 on order-4471"

    # The history was saved from the stream's result: the same answer again runs nothing.
    late = astream_message(
        refunds.agent, answer("issue_refund-1-0", {"action": "approve"}), inbox, history=history
    )
    assert [event async for event in late] == []
    assert late.handled.outcome is Outcome.DUPLICATE
    assert len(refunds.runs) == 1
