"""The sync host's event loop: one per calling thread, kept between messages, closed with it."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

import pytest
from agents import Agent, function_tool

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.openai_agents import InMemoryRuns, handle_message
from tests.openai_agents.scripted import ScriptedModel


def _agent(loops: list[asyncio.AbstractEventLoop]) -> Agent[Any]:
    @function_tool(needs_approval=True)
    async def issue_refund(order_id: str, amount: int) -> str:
        loops.append(asyncio.get_running_loop())
        return f"refunded {amount} on {order_id}"

    turns = [{"order_id": f"order-{n}", "amount": n} for n in range(2)]
    return Agent("refunds", model=ScriptedModel("issue_refund", turns), tools=[issue_refund])


def _two_approvals(agent: Agent[Any], thread: str) -> None:
    inbox, runs = MemoryAnnounce(), InMemoryRuns()
    handle_message(agent, {"thread_id": thread, "input": "refund"}, inbox, runs=runs)
    for _ in range(2):
        envelope = inbox.envelopes[-1]
        answer = {"thread_id": thread, "question_id": envelope.question_id, "answer": True}
        assert handle_message(agent, answer, inbox, runs=runs).outcome is Outcome.RESUMED


def test_a_thread_keeps_its_loop_between_messages_and_it_closes_when_the_thread_ends() -> None:
    loops: list[asyncio.AbstractEventLoop] = []
    worker = threading.Thread(target=_two_approvals, args=(_agent(loops), "loop-thread"))
    worker.start()
    worker.join()
    assert len(loops) == 2
    assert loops[0] is loops[1], "the second message ran on a new loop"
    del worker
    gc.collect()
    assert loops[0].is_closed(), "the thread ended and its loop stayed open"


def test_threads_run_on_loops_of_their_own() -> None:
    here: list[asyncio.AbstractEventLoop] = []
    there: list[asyncio.AbstractEventLoop] = []
    _two_approvals(_agent(here), "loop-main")
    worker = threading.Thread(target=_two_approvals, args=(_agent(there), "loop-other"))
    worker.start()
    worker.join()
    assert here[0] is here[1]
    assert there[0] is not here[0]


async def test_a_running_loop_is_refused_with_the_async_host_named() -> None:
    agent = _agent([])
    message = {"thread_id": "loop-async", "input": "refund"}
    with pytest.raises(RuntimeError, match="ahandle_message"):
        handle_message(agent, message, MemoryAnnounce(), runs=InMemoryRuns())
