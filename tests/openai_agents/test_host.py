"""handle_message on the OpenAI Agents SDK beyond the kit: the SDK's own approvals, rejections
the model reads, runs restored from SQLite by a fresh agent, several calls in one turn."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunContextWrapper, function_tool

from agent_wait.core import MemoryAnnounce, Outcome, WaitPolicy
from agent_wait.openai_agents import (
    InMemoryRuns,
    SqliteRuns,
    ahandle_message,
    handle_message,
    questions_in,
    wait,
)
from tests.openai_agents.scripted import ScriptedModel

REFUNDS = [{"order_id": "order-4471", "amount": 41000}, {"order_id": "order-9", "amount": 5}]


def refunds_agent(ran: list[str], turns: list[dict[str, Any]], **script: Any) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def issue_refund(order_id: str, amount: int) -> str:
        ran.append(order_id)
        return f"refunded {amount} on {order_id}"

    return Agent(
        "refunds", model=ScriptedModel("issue_refund", turns, **script), tools=[issue_refund]
    )


def reply(inbox: MemoryAnnounce, answer: Any, index: int = -1) -> dict[str, Any]:
    envelope = inbox.envelopes[index]
    return {"thread_id": envelope.thread_id, "question_id": envelope.question_id, "answer": answer}


def outputs(model_input: Any) -> list[str]:
    return [i["output"] for i in model_input if i.get("type") == "function_call_output"]


def test_the_sdk_needs_approval_tool_is_published_with_its_call_as_context() -> None:
    ran: list[str] = []
    inbox = MemoryAnnounce()
    agent = refunds_agent(ran, REFUNDS[:1])
    started = handle_message(
        agent, {"thread_id": "t-1", "input": "refund"}, inbox, runs=InMemoryRuns()
    )
    assert started.outcome is Outcome.STARTED
    [envelope] = inbox.envelopes
    assert envelope.question_id == "call-0"
    assert envelope.question == {"function": "issue_refund", "args": REFUNDS[0]}
    assert envelope.context is not None
    assert envelope.context.model_dump() == {
        "node": "refunds",
        "tool": "issue_refund",
        "tool_call_id": "call-0",
        "framework": "openai_agents",
        "agent": "refunds",
    }
    assert envelope.source is None, "a needs_approval tool is not a @wait function"
    assert envelope.answer_schema is not None
    assert ran == []


def test_a_rejection_reason_is_what_the_model_reads_and_the_tool_never_runs() -> None:
    ran: list[str] = []
    inbox, runs = MemoryAnnounce(), InMemoryRuns()
    agent = refunds_agent(ran, REFUNDS[:1])
    handle_message(agent, {"thread_id": "t-2", "input": "refund"}, inbox, runs=runs)
    done = handle_message(
        agent, reply(inbox, {"action": "reject", "reason": "over the limit"}), inbox, runs=runs
    )
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result.final_output == "done"
    assert ran == []
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert outputs(model.inputs[-1]) == ["over the limit"]


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ({"action": "escalate"}, "answer.action"),
        ({"action": "approve", "args": {"amount": 1}}, "answer.args"),
        ({"action": "reject", "reason": 7}, "answer.reason"),
        (42, "answer:"),
    ],
)
def test_answers_the_sdk_cannot_apply_are_refused_naming_the_field(answer: Any, named: str) -> None:
    ran: list[str] = []
    inbox, runs = MemoryAnnounce(), InMemoryRuns()
    agent = refunds_agent(ran, REFUNDS[:1])
    handle_message(agent, {"thread_id": "t-3", "input": "refund"}, inbox, runs=runs)
    refused = handle_message(agent, reply(inbox, answer), inbox, runs=runs)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert refused.detail is not None
    assert named in refused.detail
    approved = handle_message(agent, reply(inbox, True), inbox, runs=runs)
    assert approved.outcome is Outcome.RESUMED
    assert ran == ["order-4471"]


def test_a_fresh_agent_and_store_resume_the_run_stored_in_sqlite(tmp_path: Path) -> None:
    """What another process does: a new agent object and a new connection to the same file."""
    ran: list[str] = []
    inbox = MemoryAnnounce()
    path = tmp_path / "runs.sqlite3"
    with SqliteRuns(path) as runs:
        handle_message(
            refunds_agent(ran, REFUNDS), {"thread_id": "t-4", "input": "go"}, inbox, runs=runs
        )
    with SqliteRuns(path) as runs:
        agent = refunds_agent(ran, REFUNDS)
        resumed = handle_message(agent, reply(inbox, {"action": "approve"}), inbox, runs=runs)
        assert resumed.outcome is Outcome.RESUMED, resumed.detail
        assert resumed.question_ids == ["call-1"]
        first = inbox.envelopes[0]
        duplicate = handle_message(
            agent, {**reply(inbox, "no"), "question_id": first.question_id}, inbox, runs=runs
        )
        assert duplicate.outcome is Outcome.DUPLICATE
        assert duplicate.question_ids == ["call-1"]
    assert ran == ["order-4471"]


def test_a_run_stored_by_an_earlier_version_in_sqlite_resumes(tmp_path: Path) -> None:
    ran: list[str] = []
    inbox = MemoryAnnounce()
    memory = InMemoryRuns()
    handle_message(
        refunds_agent(ran, REFUNDS), {"thread_id": "t-5", "input": "go"}, inbox, runs=memory
    )
    stored = memory.load("t-5")
    assert stored is not None
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:
        # The table and row as the earlier version wrote them.
        old.execute(
            'CREATE TABLE IF NOT EXISTS "agent_wait_openai_agents_runs" '
            "(thread_id TEXT PRIMARY KEY, record TEXT NOT NULL, updated_at TEXT NOT NULL)"
        )
        old.execute(
            "INSERT INTO agent_wait_openai_agents_runs VALUES (?, ?, '2026-01-01T00:00:00.000Z')",
            ("t-5", stored.dumps()),
        )
    old.close()
    with SqliteRuns(path) as runs:
        assert runs.load("t-5") == stored
        resumed = handle_message(
            refunds_agent(ran, REFUNDS), reply(inbox, {"action": "approve"}), inbox, runs=runs
        )
        assert resumed.outcome is Outcome.RESUMED, resumed.detail
    with sqlite3.connect(path) as after:
        columns = [c[1] for c in after.execute("PRAGMA table_info(agent_wait_openai_agents_runs)")]
        (updated,) = after.execute(
            "SELECT updated_at FROM agent_wait_openai_agents_runs"
        ).fetchone()
    after.close()
    assert columns == ["thread_id", "record", "updated_at"]
    assert updated > "2026-01-01T00:00:00.000Z"
    assert ran == ["order-4471"]


def test_each_of_two_calls_in_one_turn_is_answered_on_its_own() -> None:
    ran: list[str] = []
    inbox, runs = MemoryAnnounce(), InMemoryRuns()
    agent = refunds_agent(ran, REFUNDS, per_turn=2)
    started = handle_message(agent, {"thread_id": "t-5", "input": "go"}, inbox, runs=runs)
    assert started.question_ids == ["call-0", "call-1"]
    first = handle_message(agent, reply(inbox, True, 0), inbox, runs=runs)
    assert first.outcome is Outcome.RESUMED, first.detail
    # The other call is still pending under its own id, and was not run.
    assert first.question_ids == ["call-1"]
    assert ran == ["order-4471"]
    second = handle_message(agent, reply(inbox, False, 1), inbox, runs=runs)
    assert second.outcome is Outcome.RESUMED, second.detail
    assert not second.parked
    assert ran == ["order-4471"]


def test_a_start_on_a_finished_thread_continues_its_conversation() -> None:
    ran: list[str] = []
    inbox, runs = MemoryAnnounce(), InMemoryRuns()
    agent = refunds_agent(ran, REFUNDS[:1])
    handle_message(agent, {"thread_id": "t-6", "input": "refund"}, inbox, runs=runs)
    handle_message(agent, reply(inbox, True), inbox, runs=runs)
    again = handle_message(agent, {"thread_id": "t-6", "input": "thanks"}, inbox, runs=runs)
    assert again.outcome is Outcome.STARTED
    model = agent.model
    assert isinstance(model, ScriptedModel)
    last = json.dumps(model.inputs[-1])
    assert "refunded 41000 on order-4471" in last
    assert "thanks" in last
    assert ran == ["order-4471"]


def test_wait_keeps_the_tools_own_needs_approval_callable_and_publishes_its_policy() -> None:
    ran: list[str] = []

    async def large(ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        return params["amount"] > 100

    @wait(WaitPolicy(timeout="P1D", tags={"approver_group": "finance"}))
    @function_tool(needs_approval=large)
    def issue_refund(order_id: str, amount: int) -> str:
        ran.append(order_id)
        return f"refunded {amount} on {order_id}"

    agent = Agent(
        "refunds",
        model=ScriptedModel("issue_refund", [REFUNDS[1], REFUNDS[0]]),
        tools=[issue_refund],
    )
    inbox, runs = MemoryAnnounce(), InMemoryRuns()

    async def thread() -> None:
        started = await ahandle_message(
            agent, {"thread_id": "t-7", "input": "go"}, inbox, runs=runs
        )
        # The small refund ran without asking; the large one asks, with the @wait policy.
        assert started.question_ids == ["call-1"]
        assert ran == ["order-9"]
        [envelope] = inbox.envelopes
        assert envelope.tags == {"approver_group": "finance"}
        assert envelope.source is not None
        assert envelope.source.function == "issue_refund"
        done = await ahandle_message(agent, reply(inbox, {"action": "approve"}), inbox, runs=runs)
        assert done.outcome is Outcome.RESUMED

    asyncio.run(thread())
    assert ran == ["order-9", "order-4471"]


def test_questions_in_refuses_what_is_not_a_run_result() -> None:
    with pytest.raises(TypeError, match="RunResult"):
        questions_in("not a result")
    assert questions_in([]) == []


def test_wait_refuses_what_is_neither_a_function_nor_a_tool() -> None:
    with pytest.raises(TypeError, match="policy"):
        wait(3)  # type: ignore[call-overload]


class _Down(ScriptedModel):
    """The model fails once a tool result came back (a provider outage after the approval)."""

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        given = args[1] if len(args) > 1 else kwargs["input"]
        if isinstance(given, list) and outputs(given):
            raise ConnectionError("model down")
        return await super().get_response(*args, **kwargs)


def test_a_resume_that_raises_stores_nothing_and_the_question_stays_pending() -> None:
    ran: list[str] = []
    inbox, runs = MemoryAnnounce(), InMemoryRuns()

    @function_tool(needs_approval=True)
    def issue_refund(order_id: str, amount: int) -> str:
        ran.append(order_id)
        return f"refunded {amount} on {order_id}"

    agent = Agent("refunds", model=_Down("issue_refund", REFUNDS[:1]), tools=[issue_refund])
    handle_message(agent, {"thread_id": "t-8", "input": "go"}, inbox, runs=runs)
    failed = handle_message(agent, reply(inbox, True), inbox, runs=runs)
    assert failed.outcome is Outcome.RESUME_FAILED
    assert isinstance(failed.error, ConnectionError)
    assert failed.detail is not None
    assert "still pending" in failed.detail
    # The approved tool ran before the model failed: what the docs list as not at-most-once.
    assert ran == ["order-4471"]
    record = runs.load("t-8")
    assert record is not None
    assert [q.question_id for q in record.questions] == ["call-0"]
