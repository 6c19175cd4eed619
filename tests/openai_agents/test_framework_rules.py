"""What the OpenAI Agents SDK itself does with approvals: the rules docs/frameworks/openai-agents.md states.

handle_message exists because of these; if one of them fails after an SDK upgrade, the docs and
agent_wait.openai_agents._host need another look.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, Runner, RunState, function_tool

from tests.openai_agents.scripted import ScriptedModel

REFUNDS = [{"order_id": "order-1", "amount": 5}, {"order_id": "order-2", "amount": 7}]


def refunds(ran: list[str], **script: Any) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def issue_refund(order_id: str, amount: int) -> str:
        ran.append(order_id)
        return f"refunded {amount} on {order_id}"

    return Agent(
        "refunds", model=ScriptedModel("issue_refund", REFUNDS, **script), tools=[issue_refund]
    )


def test_a_stored_state_approved_twice_runs_the_tool_twice() -> None:
    ran: list[str] = []
    agent = refunds(ran)
    stored = Runner.run_sync(agent, "go").to_state().to_string()
    for _ in range(2):
        state = asyncio.run(RunState.from_string(agent, stored))
        [item] = state.get_interruptions()
        state.approve(item)
        Runner.run_sync(agent, state)
    assert ran == ["order-1", "order-1"], "the SDK deduplicates now: the docs overstate the risk"


def test_deciding_one_of_two_pending_calls_leaves_the_other_pending_under_its_id() -> None:
    ran: list[str] = []
    agent = refunds(ran, per_turn=2)
    parked = Runner.run_sync(agent, "go")
    assert [i.call_id for i in parked.interruptions] == ["call-0", "call-1"]
    state = parked.to_state()
    first = next(i for i in state.get_interruptions() if i.call_id == "call-0")
    state.approve(first)
    again = Runner.run_sync(agent, state)
    assert [i.call_id for i in again.interruptions] == ["call-1"]
    assert ran == ["order-1"]
