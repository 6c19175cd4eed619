"""ADK's own confirmations through handle_message: require_confirmation and request_confirmation."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models import LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.adk.tools import FunctionTool, ToolContext
from google.genai import types
from pydantic import Field

from agent_wait.core import MemoryAnnounce, Outcome, WaitEnvelope
from agent_wait.google_adk import ahandle_message, handle_message, questions_in, wait
from tests.google_adk.conftest import runner_for
from tests.google_adk.fake_model import CONFIRMATION, ScriptedModel


def _reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    return {"thread_id": envelope.thread_id, "question_id": envelope.question_id, "answer": answer}


class Refunds:
    def __init__(self) -> None:
        self.runs: list[tuple[str, int]] = []

    def issue_refund(self, order_id: str, amount: int) -> str:
        """Refund an order."""
        self.runs.append((order_id, amount))
        return f"refunded {amount} on {order_id}"


def _refund_runner(refunds: Refunds, require: Any = True) -> Any:
    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        return refunds.issue_refund(order_id, amount)

    tool = FunctionTool(issue_refund, require_confirmation=require)
    return runner_for([tool], [("issue_refund", {"order_id": "o-1", "amount": 30})])


def test_require_confirmation_parks_and_an_approval_runs_the_tool_once() -> None:
    refunds, inbox = Refunds(), MemoryAnnounce()
    runner = _refund_runner(refunds)
    started = handle_message(runner, {"thread_id": "adk-approve", "input": "refund"}, inbox)
    assert started.outcome is Outcome.STARTED
    assert refunds.runs == []
    (envelope,) = inbox.envelopes
    assert envelope.question_id.startswith("adk-")
    assert envelope.question["function"] == "issue_refund"
    assert envelope.question["args"] == {"order_id": "o-1", "amount": 30}
    assert "approve or reject" in envelope.question["hint"]
    assert envelope.allowed_actions == ["approve", "reject"]
    assert envelope.context is not None
    assert (envelope.context.node, envelope.context.tool, envelope.context.tool_call_id) == (
        "shop",
        "issue_refund",
        "call-0",
    )
    assert (envelope.context.framework, envelope.context.agent) == ("google_adk", "shop")

    resumed = handle_message(runner, _reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED, resumed.detail
    assert not resumed.parked
    assert refunds.runs == [("o-1", 30)]

    again = handle_message(runner, _reply(envelope, {"action": "approve"}), inbox)
    assert again.outcome is Outcome.DUPLICATE
    assert not again.ran
    assert refunds.runs == [("o-1", 30)], "a duplicate answer ran the tool again"


def test_a_rejection_does_not_run_the_tool() -> None:
    refunds, inbox = Refunds(), MemoryAnnounce()
    runner = _refund_runner(refunds)
    handle_message(runner, {"thread_id": "adk-reject", "input": "refund"}, inbox)
    resumed = handle_message(runner, _reply(inbox.envelopes[-1], {"action": "reject"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert refunds.runs == []
    texts = [
        part.function_response.response
        for event in resumed.result
        for part in (event.content.parts if event.content else None) or ()
        if part.function_response is not None
    ]
    assert {"error": "This tool call is rejected."} in texts


def test_adk_s_own_confirmation_shape_is_accepted() -> None:
    refunds, inbox = Refunds(), MemoryAnnounce()
    runner = _refund_runner(refunds)
    handle_message(runner, {"thread_id": "adk-native", "input": "refund"}, inbox)
    handle_message(runner, _reply(inbox.envelopes[-1], {"confirmed": True}), inbox)
    assert refunds.runs == [("o-1", 30)]


def test_a_callable_require_confirmation_asks_only_when_it_says_so() -> None:
    refunds, inbox = Refunds(), MemoryAnnounce()
    runner = _refund_runner(refunds, require=lambda order_id, amount: amount > 100)
    handled = handle_message(runner, {"thread_id": "adk-small", "input": "refund"}, inbox)
    assert handled.outcome is Outcome.STARTED
    assert not handled.parked
    assert inbox.envelopes == []
    assert refunds.runs == [("o-1", 30)]


@pytest.mark.parametrize("answer", ["yes", {"action": "maybe"}, {"action": "approve", "x": 1}])
def test_an_answer_that_is_no_confirmation_is_refused_before_anything_runs(answer: Any) -> None:
    refunds, inbox = Refunds(), MemoryAnnounce()
    runner = _refund_runner(refunds)
    handle_message(runner, {"thread_id": "adk-invalid", "input": "refund"}, inbox)
    envelope = inbox.envelopes[-1]
    refused = handle_message(runner, _reply(envelope, answer), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert refunds.runs == []
    # The question is still pending: a good answer resumes it.
    resumed = handle_message(runner, _reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert refunds.runs == [("o-1", 30)]


def test_an_unknown_question_runs_nothing() -> None:
    refunds, inbox = Refunds(), MemoryAnnounce()
    runner = _refund_runner(refunds)
    handle_message(runner, {"thread_id": "adk-unknown", "input": "refund"}, inbox)
    stray = {"thread_id": "adk-unknown", "question_id": "adk-not-asked", "answer": "approve"}
    handled = handle_message(runner, stray, inbox)
    assert handled.outcome is Outcome.UNKNOWN_QUESTION
    assert refunds.runs == []


class TimeOff:
    """ADK's documented request_confirmation example: the person sends back a payload."""

    def __init__(self) -> None:
        self.granted: list[int] = []

    def request_time_off(self, days: int, tool_context: ToolContext) -> dict[str, Any]:
        confirmation = tool_context.tool_confirmation
        if not confirmation:
            tool_context.request_confirmation(
                hint="Please approve or reject the time off request.",
                payload={"approved_days": 0},
            )
            return {"status": "Manager approval is required."}
        if not confirmation.confirmed:
            return {"status": "rejected"}
        approved = confirmation.payload["approved_days"]
        self.granted.append(approved)
        return {"status": "ok", "approved_days": approved}


async def test_request_confirmation_s_hint_and_payload_make_the_question_and_its_schema() -> None:
    time_off, inbox = TimeOff(), MemoryAnnounce()

    def request_time_off(days: int, tool_context: ToolContext) -> dict[str, Any]:
        """Request days off."""
        return time_off.request_time_off(days, tool_context)

    runner = runner_for([request_time_off], [("request_time_off", {"days": 5})])
    started = await ahandle_message(
        runner, {"thread_id": "adk-payload", "input": "time off"}, inbox
    )
    assert started.outcome is Outcome.STARTED
    (envelope,) = inbox.envelopes
    assert envelope.question == {
        "function": "request_time_off",
        "args": {"days": 5},
        "hint": "Please approve or reject the time off request.",
        "payload": {"approved_days": 0},
    }
    assert envelope.answer_schema == {
        "type": "object",
        "properties": {
            "action": {"enum": ["approve", "reject"]},
            "payload": {"type": "object", "properties": {"approved_days": {"type": "integer"}}},
        },
        "required": ["action"],
    }
    answer = {"action": "approve", "payload": {"approved_days": 3}}
    resumed = await ahandle_message(runner, _reply(envelope, answer), inbox)
    assert resumed.outcome is Outcome.RESUMED, resumed.detail
    assert time_off.granted == [3]
    duplicate = await ahandle_message(runner, _reply(envelope, answer), inbox)
    assert duplicate.outcome is Outcome.DUPLICATE
    assert time_off.granted == [3]


def test_questions_in_reads_the_pending_confirmations_of_a_run() -> None:
    refunds = Refunds()
    runner = _refund_runner(refunds)
    started = handle_message(runner, {"thread_id": "adk-read", "input": "refund"}, None)
    (question,) = questions_in(started.result)
    assert question.question["function"] == "issue_refund"
    assert questions_in([]) == []


def test_a_database_session_service_keeps_the_thread_for_a_new_runner(tmp_path: Path) -> None:
    """A parked thread in sqlite is resumed by another Runner on another service instance."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'sessions.sqlite3'}"
    refunds, inbox = Refunds(), MemoryAnnounce()

    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        return refunds.issue_refund(order_id, amount)

    def runner() -> Any:
        tool = FunctionTool(issue_refund, require_confirmation=True)
        calls = [("issue_refund", {"order_id": "o-9", "amount": 7})]
        return runner_for([tool], calls, DatabaseSessionService(url))

    handle_message(runner(), {"thread_id": "adk-db", "input": "refund"}, inbox)
    envelope = inbox.envelopes[-1]
    resumed = handle_message(runner(), _reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED, resumed.detail
    assert refunds.runs == [("o-9", 7)]
    duplicate = handle_message(runner(), _reply(envelope, {"action": "approve"}), inbox)
    assert duplicate.outcome is Outcome.DUPLICATE
    assert refunds.runs == [("o-9", 7)]


class TwoCalls(ScriptedModel):
    """Calls ``issue_refund`` twice in one model turn, then answers "done"."""

    turns: list[int] = Field(default_factory=list[int])

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        done = sum(
            1
            for content in llm_request.contents
            for part in content.parts or ()
            if part.function_response is not None and part.function_response.name != CONFIRMATION
        )
        self.turns.append(done)
        if done:
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))
            return
        calls = [
            types.FunctionCall(
                name="issue_refund", args={"order_id": f"o-{n}", "amount": n}, id=f"c{n}"
            )
            for n in (1, 2)
        ]
        parts = [types.Part(function_call=call) for call in calls]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def test_two_confirmations_of_one_turn_are_answered_one_at_a_time() -> None:
    """Each answer resumes its own call once; ADK gives the model a turn after each."""
    refunds, inbox = Refunds(), MemoryAnnounce()

    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        return refunds.issue_refund(order_id, amount)

    model = TwoCalls()
    agent = LlmAgent(
        name="shop", model=model, tools=[FunctionTool(issue_refund, require_confirmation=True)]
    )
    runner = Runner(app_name="shop", agent=agent, session_service=InMemorySessionService())
    started = handle_message(runner, {"thread_id": "adk-two", "input": "refund"}, inbox)
    assert len(started.question_ids) == 2
    first, second = inbox.envelopes
    assert handle_message(runner, _reply(first, {"action": "approve"}), inbox).outcome is (
        Outcome.RESUMED
    )
    assert refunds.runs == [("o-1", 1)]
    resumed = handle_message(runner, _reply(second, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED, resumed.detail
    assert refunds.runs == [("o-1", 1), ("o-2", 2)]
    assert model.turns == [0, 2, 2], "the model did not get a turn after each answer"
    for envelope in (first, second):
        again = handle_message(runner, _reply(envelope, {"action": "approve"}), inbox)
        assert again.outcome is Outcome.DUPLICATE
    assert refunds.runs == [("o-1", 1), ("o-2", 2)]


@pytest.mark.parametrize("kind", ["require_confirmation", "request_confirmation", "wait"])
def test_a_resumable_app_resumes_the_invocation_that_asked(kind: str) -> None:
    runs: list[int] = []

    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        if kind == "request_confirmation" and tool_context.tool_confirmation is None:
            tool_context.request_confirmation(hint="Refund?")
            return "approval required"
        runs.append(amount)
        return "refunded"

    tools: dict[str, Any] = {
        "require_confirmation": FunctionTool(issue_refund, require_confirmation=True),
        "request_confirmation": issue_refund,
        "wait": wait(issue_refund),
    }
    call = [("issue_refund", {"order_id": "o-1", "amount": 30})]
    runner = runner_for([tools[kind]], call, resumable=True)
    inbox = MemoryAnnounce()
    started = handle_message(runner, {"thread_id": "adk-resumable", "input": "refund"}, inbox)
    assert started.outcome is Outcome.STARTED, started.detail
    [envelope] = inbox.envelopes
    [asked] = {e.invocation_id for e in started.result}

    resumed = handle_message(runner, _reply(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED, resumed.detail
    assert not resumed.parked
    assert runs == [30]
    # ADK resumed the invocation that asked (and closed it as a resumable one does).
    assert {e.invocation_id for e in resumed.result} == {asked}
    assert any(e.actions.end_of_agent for e in resumed.result)

    again = handle_message(runner, _reply(envelope, {"action": "approve"}), inbox)
    assert again.outcome is Outcome.DUPLICATE
    assert runs == [30]
    # A new message is a new invocation.
    later = handle_message(runner, {"thread_id": "adk-resumable", "input": "thanks"}, inbox)
    assert later.outcome is Outcome.STARTED, later.detail
    assert asked not in {e.invocation_id for e in later.result}
