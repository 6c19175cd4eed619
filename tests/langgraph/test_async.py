"""The async path: async nodes and @wait functions, ainvoke, ahandle_message, AsyncSqliteSaver."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command

from agent_wait.core import MemoryAnnounce, Outcome, WaitPolicy, derive_question_id
from agent_wait.langgraph import ahandle_message, apublish_interrupts, wait
from tests.langgraph.conftest import answer, check_envelope, clock


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any


def builder(issue_refund: Any) -> StateGraph[State]:
    async def refund(state: State) -> State:
        return {"result": await issue_refund(state["order_id"], state["amount"])}

    graph = StateGraph(State)
    graph.add_node("refund", refund)
    graph.add_edge(START, "refund")
    return graph


async def test_async_node_ainvoke_and_apublish(inbox: MemoryAnnounce, tmp_path: Path) -> None:
    runs: list[int] = []

    @wait(WaitPolicy(timeout="PT1H"))
    async def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return f"refunded {amount}"

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        graph = builder(issue_refund).compile(checkpointer=saver)
        cfg: Any = {"configurable": {"thread_id": "a-1"}}
        result = await graph.ainvoke({"order_id": "a-1", "amount": 12}, cfg)
        report = await apublish_interrupts(result, "a-1", inbox, clock=clock)
        [envelope] = report.envelopes
        check_envelope(
            envelope,
            thread_id="a-1",
            question_id=result["__interrupt__"][0].id,
            question={"function": "issue_refund", "args": {"order_id": "a-1", "amount": 12}},
            allowed_actions=["approve", "reject"],
            expires_at="2026-09-11T10:00:00Z",
            source={"function": "issue_refund"},
        )
        done = await graph.ainvoke(
            Command(resume={envelope.question_id: {"action": "approve"}}), cfg
        )
        assert done["result"] == "refunded 12"
        assert runs == [12]


async def test_ahandle_message_main_path(inbox: MemoryAnnounce, tmp_path: Path) -> None:
    runs: list[int] = []

    @wait
    async def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return f"refunded {amount}"

    start = {"thread_id": "a-2", "input": {"order_id": "a-2", "amount": 99}}
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        graph = builder(issue_refund).compile(checkpointer=saver)
        started = await ahandle_message(graph, start, inbox)
        assert started.outcome is Outcome.STARTED
        again = await ahandle_message(graph, start, inbox)
        assert again.outcome is Outcome.REPUBLISHED
        assert again.question_ids == started.question_ids
        envelope = started.report.envelopes[0]
        bad = await ahandle_message(
            graph, answer(envelope, {"action": "approve", "args": {"x": 1}})
        )
        assert bad.outcome is Outcome.INVALID_ANSWER
        resumed = await ahandle_message(graph, answer(envelope, {"action": "approve"}), inbox)
        assert resumed.outcome is Outcome.RESUMED
        assert resumed.result["result"] == "refunded 99"
        duplicate = await ahandle_message(graph, answer(envelope, {"action": "reject"}))
        assert duplicate.outcome is Outcome.DUPLICATE
        unknown = await ahandle_message(
            graph, {"thread_id": "a-2", "question_id": "f" * 32, "answer": {"action": "approve"}}
        )
        assert unknown.outcome is Outcome.UNKNOWN_QUESTION
    assert runs == [99]
    assert inbox.question_ids == started.question_ids * 2


async def test_async_mode_in_an_async_node(inbox: MemoryAnnounce) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    @wait(mode="async", announce=inbox)
    async def issue_refund(order_id: str, amount: int) -> str:
        raise AssertionError("async mode never runs the body")

    graph = builder(issue_refund).compile(checkpointer=InMemorySaver())
    handled = await ahandle_message(
        graph, {"thread_id": "a-3", "input": {"order_id": "a-3", "amount": 5}}
    )
    expected = derive_question_id("a-3", "issue_refund", {"order_id": "a-3", "amount": 5})
    assert handled.outcome is Outcome.STARTED
    assert handled.result["result"] == {
        "status": "pending_approval",
        "question_id": expected,
        "function": "issue_refund",
    }
    assert not handled.parked  # nothing is parked in async mode
    assert inbox.question_ids == [expected]


async def test_a_start_message_names_who_started_the_run(
    inbox: MemoryAnnounce, tmp_path: Path
) -> None:
    @wait
    async def issue_refund(order_id: str, amount: int) -> str:
        return f"refunded {amount}"

    start = {"thread_id": "a-3", "input": {"order_id": "a-3", "amount": 5}, "started_by": "bob"}
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite")) as saver:
        graph = builder(issue_refund).compile(checkpointer=saver)
        started = await ahandle_message(graph, start, inbox)
        again = await ahandle_message(graph, start, inbox)
    assert [e.started_by for e in (*started.report.envelopes, *again.report.envelopes)] == [
        "bob",
        "bob",
    ]
    assert inbox.envelopes[0].to_dict()["started_by"] == "bob"
