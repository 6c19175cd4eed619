"""@wait on ADK tools: edits, decision parameters, async tools, misuse."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.adk.tools import FunctionTool, ToolContext
from google.genai import types

from agent_wait.core import MemoryAnnounce, Outcome, WaitEnvelope
from agent_wait.google_adk import ahandle_message, handle_message, wait
from tests.google_adk.conftest import runner_for

CALL = [("issue_refund", {"order_id": "o-1", "amount": 30})]


def _reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    return {"thread_id": envelope.thread_id, "question_id": envelope.question_id, "answer": answer}


def test_an_edited_approval_runs_the_body_with_the_new_arguments() -> None:
    runs: list[tuple[str, int]] = []

    @wait
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        runs.append((order_id, amount))
        return "ok"

    inbox = MemoryAnnounce()
    runner = runner_for([issue_refund], CALL)
    handle_message(runner, {"thread_id": "wait-edit", "input": "go"}, inbox)
    envelope = inbox.envelopes[-1]
    assert envelope.question == {"function": "issue_refund", "args": CALL[0][1]}
    assert envelope.context is not None
    assert envelope.context.tool_call_id == "call-0"
    edited = {"action": "approve", "args": {"amount": 12}}
    assert handle_message(runner, _reply(envelope, edited), inbox).outcome is Outcome.RESUMED
    assert runs == [("o-1", 12)]


def test_a_decision_parameter_receives_the_answer_and_nothing_before_it() -> None:
    decisions: list[Any] = []

    @wait(decision="decision")
    def issue_refund(
        order_id: str, amount: int, tool_context: ToolContext, decision: Any = None
    ) -> str:
        """Refund an order."""
        decisions.append(decision)
        return "ok"

    inbox = MemoryAnnounce()
    runner = runner_for([FunctionTool(issue_refund)], CALL)
    handle_message(runner, {"thread_id": "wait-decision", "input": "go"}, inbox)
    assert decisions == [], "the body ran before the answer"
    answer = {"action": "reject", "reason": "too much"}
    handle_message(runner, _reply(inbox.envelopes[-1], answer), inbox)
    assert decisions == [answer]


async def test_an_async_tool_parks_and_resumes() -> None:
    runs: list[int] = []

    @wait
    async def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        runs.append(amount)
        return "ok"

    inbox = MemoryAnnounce()
    runner = runner_for([issue_refund], CALL)
    await ahandle_message(runner, {"thread_id": "wait-async", "input": "go"}, inbox)
    assert runs == []
    envelope = inbox.envelopes[-1]
    await ahandle_message(runner, _reply(envelope, {"action": "approve"}), inbox)
    dup = await ahandle_message(runner, _reply(envelope, {"action": "approve"}), inbox)
    assert dup.outcome is Outcome.DUPLICATE
    assert runs == [30]


def test_adk_s_own_flag_answers_a_wait_question() -> None:
    """``{"confirmed": true}`` approves, through the host or sent to ADK by its own clients."""
    runs: list[int] = []

    @wait
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        runs.append(amount)
        return "ok"

    inbox = MemoryAnnounce()
    runner = runner_for([issue_refund], CALL)
    handle_message(runner, {"thread_id": "wait-flag", "input": "go"}, inbox)
    handle_message(runner, _reply(inbox.envelopes[-1], {"confirmed": True}), inbox)
    assert runs == [30]

    # Straight to ADK, as adk web does: the response carries no payload.
    other = runner_for([issue_refund], CALL)
    handle_message(other, {"thread_id": "wait-adk-client", "input": "go"}, inbox)
    part = types.Part(
        function_response=types.FunctionResponse(
            id=inbox.envelopes[-1].question_id,
            name="adk_request_confirmation",
            response={"confirmed": True},
        )
    )

    async def answer() -> None:
        async for _ in other.run_async(
            user_id="agent-wait",
            session_id="wait-adk-client",
            new_message=types.Content(role="user", parts=[part]),
        ):
            pass

    asyncio.run(answer())
    assert runs == [30, 30]


def test_wait_needs_the_tool_context_and_goes_on_the_function() -> None:
    def no_context(order_id: str) -> str:
        return order_id

    with pytest.raises(TypeError, match="tool_context"):
        wait(no_context)

    def refund(order_id: str, tool_context: ToolContext) -> str:
        return order_id

    with pytest.raises(TypeError, match="decorate the function"):
        wait(FunctionTool(refund))
