"""stream_message and astream_message: the SDK's stream events as the run goes, then Handled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import Agent, RunItemStreamEvent, function_tool

from agent_wait.core import MemoryAnnounce, Outcome, WaitPolicy
from agent_wait.openai_agents import (
    InMemoryRuns,
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
    wait,
)
from tests.openai_agents.scripted import ScriptedModel

REFUND = {"order_id": "order-4471", "amount": 41000}


def _refunds(ran: list[str]) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def issue_refund(order_id: str, amount: int) -> str:
        ran.append(order_id)
        return f"refunded {amount} on {order_id}"

    return Agent("refunds", model=ScriptedModel("issue_refund", [REFUND]), tools=[issue_refund])


def _streamed(kind: str, agent: Agent[Any], message: Any, runs: InMemoryRuns) -> Any:
    """The message streamed to its end by stream_message, or by astream_message on a loop."""
    inbox = MemoryAnnounce()
    if kind == "sync":
        run = stream_message(agent, message, inbox, runs=runs)
        return list(run), run.handled

    async def drained() -> Any:
        run = astream_message(agent, message, inbox, runs=runs)
        return [event async for event in run], run.handled

    return asyncio.run(drained())


def _named(events: list[Any]) -> list[str]:
    return [e.name for e in events if isinstance(e, RunItemStreamEvent)]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_streamed_run_parks_resumes_once_and_a_duplicate_streams_nothing(kind: str) -> None:
    ran: list[str] = []
    agent, runs = _refunds(ran), InMemoryRuns()

    events, handled = _streamed(kind, agent, {"thread_id": "s-1", "input": "refund"}, runs)
    assert handled.outcome is Outcome.STARTED
    assert handled.question_ids == ["call-0"]
    assert "tool_called" in _named(events)
    assert ran == []

    answer = {"thread_id": "s-1", "question_id": "call-0", "answer": {"action": "approve"}}
    events, handled = _streamed(kind, agent, answer, runs)
    assert handled.outcome is Outcome.RESUMED, handled.detail
    assert not handled.parked
    assert handled.result.final_output == "done"
    assert "tool_output" in _named(events)
    assert ran == ["order-4471"]

    events, handled = _streamed(kind, agent, answer, runs)
    assert events == []
    assert handled.outcome is Outcome.DUPLICATE
    assert ran == ["order-4471"]


def _unrecorded(ran: list[str]) -> Agent[Any]:
    """An async tool the SDK runs in the run's own task: no record, no worker thread."""

    @wait(WaitPolicy(timeout="PT1H"), once=False)
    async def issue_refund(order_id: str, amount: int) -> str:
        ran.append(order_id)
        return f"refunded {amount} on {order_id}"

    return Agent("refunds", model=ScriptedModel("issue_refund", [REFUND]), tools=[issue_refund])


START = {"thread_id": "s-3", "input": "refund"}
ANSWER = {"thread_id": "s-3", "question_id": "call-0", "answer": True}
ELSEWHERE = {"thread_id": "s-elsewhere", "input": "refund"}


def test_a_sync_stream_stopped_early_stops_the_run_and_stores_nothing() -> None:
    ran: list[str] = []
    agent, inbox, runs = _unrecorded(ran), MemoryAnnounce(), InMemoryRuns()
    for _ in stream_message(agent, START, inbox, runs=runs):
        break
    assert runs.load("s-3") is None
    assert inbox.envelopes == []

    handle_message(agent, START, inbox, runs=runs)
    parked = runs.load("s-3")
    for _ in stream_message(agent, ANSWER, inbox, runs=runs):
        break
    at_the_break = list(ran)
    # The loop runs again for another message: the stopped run does not go on there.
    handle_message(agent, ELSEWHERE, inbox, runs=runs)
    assert ran == at_the_break
    assert runs.load("s-3") == parked
    again = handle_message(agent, ANSWER, inbox, runs=runs)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert ran == [*at_the_break, "order-4471"]


async def test_an_async_stream_stopped_early_stops_the_run_and_stores_nothing() -> None:
    ran: list[str] = []
    agent, inbox, runs = _unrecorded(ran), MemoryAnnounce(), InMemoryRuns()
    await ahandle_message(agent, START, inbox, runs=runs)
    parked = runs.load("s-3")
    async for _ in astream_message(agent, ANSWER, inbox, runs=runs):
        break
    at_the_break = list(ran)
    await ahandle_message(agent, ELSEWHERE, inbox, runs=runs)
    assert ran == at_the_break
    assert runs.load("s-3") == parked
    again = await ahandle_message(agent, ANSWER, inbox, runs=runs)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert ran == [*at_the_break, "order-4471"]


def test_a_message_handled_between_two_events_leaves_the_stream_running() -> None:
    agent, inbox, runs = _refunds([]), MemoryAnnounce(), InMemoryRuns()
    run = stream_message(agent, {"thread_id": "s-4", "input": "refund"}, inbox, runs=runs)
    events = iter(run)
    next(events)
    # Another thread's message on this thread's loop, while the stream's generators wait on it.
    assert handle_message(agent, ELSEWHERE, inbox, runs=runs).outcome is Outcome.STARTED
    assert list(events)
    assert run.handled.question_ids == ["call-0"]
    assert runs.load("s-4") is not None


async def test_a_sync_stream_is_refused_in_a_running_loop_with_the_async_one_named() -> None:
    agent = _refunds([])
    message = {"thread_id": "s-6", "input": "refund"}
    with pytest.raises(RuntimeError, match="astream_message"):
        stream_message(agent, message, MemoryAnnounce(), runs=InMemoryRuns())
