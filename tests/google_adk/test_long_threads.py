"""A late or unknown answer on a long session is decided from its recent events and its record."""

from __future__ import annotations

import asyncio
from typing import Any

from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.tools import FunctionTool
from google.genai import types

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.google_adk import ahandle_message, handle_message
from agent_wait.google_adk._host import RECORD_KEY  # pyright: ignore[reportPrivateUsage]
from tests.google_adk.conftest import runner_for
from tests.google_adk.fake_model import CONFIRMATION

STEPS = 20


class Reads(InMemorySessionService):
    """ADK's in-memory session service, keeping how many events each read handed over."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[int] = []

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        session = await super().get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )
        if session is not None:
            self.reads.append(len(session.events))
        return session

    def stored(self, thread: str) -> int:
        return len(self.sessions["shop"]["agent-wait"][thread].events)


def step() -> str:
    """One plain step."""
    return "ok"


def issue_refund(order_id: str, amount: int) -> str:
    """Refund an order."""
    return f"refunded {amount} on {order_id}"


def _runner(sessions: Reads) -> Runner:
    tools = [FunctionTool(step), FunctionTool(issue_refund, require_confirmation=True)]
    calls: list[tuple[str, dict[str, Any]]] = [("step", {})] * STEPS
    calls.append(("issue_refund", {"order_id": "o-1", "amount": 30}))
    return runner_for(tools, calls, sessions)


def _answer(thread: str, question_id: str, answer: Any) -> dict[str, Any]:
    return {"thread_id": thread, "question_id": question_id, "answer": answer}


def _late_and_unknown(runner: Runner, sessions: Reads, thread: str, asked: str) -> list[int]:
    """The outcomes' reads: a late answer is a duplicate, a never-asked one unknown."""
    sessions.reads.clear()
    inbox = MemoryAnnounce()
    late = handle_message(runner, _answer(thread, asked, {"action": "approve"}), inbox)
    assert late.outcome is Outcome.DUPLICATE, late.detail
    unknown = handle_message(runner, _answer(thread, "adk-never-asked", True), inbox)
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION, unknown.detail
    assert not late.ran
    assert not unknown.ran
    return list(sessions.reads)


def test_a_late_and_an_unknown_answer_read_only_recent_events() -> None:
    sessions, inbox = Reads(), MemoryAnnounce()
    runner = _runner(sessions)
    handle_message(runner, {"thread_id": "long", "input": "go"}, inbox)
    (envelope,) = inbox.envelopes
    assert sessions.stored("long") > 2 * STEPS
    resumed = handle_message(
        runner, _answer("long", envelope.question_id, {"action": "approve"}), inbox
    )
    assert resumed.outcome is Outcome.RESUMED, resumed.detail

    reads = _late_and_unknown(runner, sessions, "long", envelope.question_id)
    assert reads
    assert max(reads) <= 16 < sessions.stored("long"), reads


async def test_the_async_host_reads_the_record_too() -> None:
    sessions, inbox = Reads(), MemoryAnnounce()
    runner = _runner(sessions)
    await ahandle_message(runner, {"thread_id": "long-async", "input": "go"}, inbox)
    (envelope,) = inbox.envelopes
    sessions.reads.clear()
    # Parked: the pending confirmation is among the recent events, the record says it is asked.
    again = await ahandle_message(runner, {"thread_id": "long-async", "input": "go"}, inbox)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.question_ids == [envelope.question_id]
    unknown = await ahandle_message(runner, _answer("long-async", "adk-nope", True), inbox)
    assert unknown.outcome is Outcome.UNKNOWN_QUESTION
    assert max(sessions.reads) <= 16 < sessions.stored("long-async")


async def _parked_by_adk(runner: Runner, thread: str) -> str:
    """A session ADK parked by itself (no record): the confirmation's id."""
    await runner.session_service.create_session(
        app_name="shop", user_id="agent-wait", session_id=thread
    )
    go = types.Content(role="user", parts=[types.Part(text="go")])
    events = [
        e async for e in runner.run_async(user_id="agent-wait", session_id=thread, new_message=go)
    ]
    [request] = [c.id for e in events for c in e.get_function_calls() if c.name == CONFIRMATION]
    assert request is not None
    return request


async def _answered_by_adk(runner: Runner, thread: str, request: str) -> None:
    answer = types.FunctionResponse(id=request, name=CONFIRMATION, response={"confirmed": True})
    reply = types.Content(role="user", parts=[types.Part(function_response=answer)])
    async for _ in runner.run_async(user_id="agent-wait", session_id=thread, new_message=reply):
        pass


def test_a_session_without_the_record_is_read_whole() -> None:
    sessions = Reads()
    runner = _runner(sessions)
    request = asyncio.run(_parked_by_adk(runner, "old"))
    asyncio.run(_answered_by_adk(runner, "old", request))
    session = asyncio.run(
        sessions.get_session(app_name="shop", user_id="agent-wait", session_id="old")
    )
    assert session is not None
    assert RECORD_KEY not in session.state

    reads = _late_and_unknown(runner, sessions, "old", request)
    assert sessions.stored("old") in reads, "the session was not read whole"


def test_a_pending_question_of_a_session_without_the_record_resumes_and_records() -> None:
    sessions, inbox = Reads(), MemoryAnnounce()
    runner = _runner(sessions)
    request = asyncio.run(_parked_by_adk(runner, "old-parked"))

    resumed = handle_message(runner, _answer("old-parked", request, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED, resumed.detail
    session = asyncio.run(
        sessions.get_session(app_name="shop", user_id="agent-wait", session_id="old-parked")
    )
    assert session is not None
    assert request in session.state[RECORD_KEY]["answered"]

    # Recorded by the resume: from now on the recent events and the record decide.
    reads = _late_and_unknown(runner, sessions, "old-parked", request)
    assert max(reads) <= 16 < sessions.stored("old-parked"), reads
