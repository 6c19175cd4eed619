"""Answers a durable checkpointer cannot save are refused before the ``@wait`` call runs.

LangGraph saves the resume value and what the node returns; its serialiser refuses integers past
64 bits. The answer would otherwise fail the run after the body ran, and a host that leaves
the message unacknowledged gets it again: the body runs on every redelivery, and an answer
returned in the body's place (a rejection) leaves the thread parked for good.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from agent_wait.core import MemoryAnnounce, Outcome, WaitPolicy
from agent_wait.langgraph import handle_message, wait

BIG = 98765432109876543210


class State(TypedDict, total=False):
    order_id: str
    refund: Any
    notice: Any


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    connection = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(connection)
    finally:
        connection.close()


def _graph(saver: SqliteSaver, runs: list[tuple[str, Any]]) -> Any:
    @wait(WaitPolicy(timeout="P3D"))
    def issue_refund(order_id: str) -> str:
        runs.append(("issue_refund", order_id))
        return "refunded"

    @wait(WaitPolicy(timeout="PT4H"))
    def notify_customer(order_id: str, decision: Any = None) -> str:
        runs.append(("notify_customer", decision))
        return "notified"

    builder = StateGraph(State)
    builder.add_node("refund", lambda s: {"refund": issue_refund(s["order_id"])})
    builder.add_node("notify", lambda s: {"notice": notify_customer(s["order_id"])})
    builder.add_edge(START, "refund")
    builder.add_edge("refund", "notify")
    builder.add_edge("notify", END)
    return builder.compile(checkpointer=saver)


def _reply(question_id: str, answer: Any) -> dict[str, Any]:
    return {"thread_id": "order-1", "question_id": question_id, "answer": answer}


def test_a_redelivered_unstorable_answer_never_runs_the_body(saver: SqliteSaver) -> None:
    runs: list[tuple[str, Any]] = []
    graph = _graph(saver, runs)
    inbox = MemoryAnnounce()
    started = handle_message(graph, {"thread_id": "order-1", "input": {"order_id": "o-1"}}, inbox)
    [refund] = started.question_ids
    [notify] = handle_message(graph, _reply(refund, {"action": "approve"}), inbox).question_ids
    runs.clear()

    poison = _reply(notify, {"action": "send", "account": BIG})
    for _ in range(3):  # the host leaves it unacknowledged; the queue delivers it again
        handled = handle_message(graph, poison, inbox, strict=True)
        assert handled.outcome is Outcome.INVALID_ANSWER
        assert f"answer.account: the integer {BIG}" in (handled.detail or "")
    assert runs == []

    fixed = {"action": "send", "account": str(BIG)}
    assert handle_message(graph, _reply(notify, fixed), inbox).outcome is Outcome.RESUMED
    assert runs == [("notify_customer", fixed)]


def test_an_unstorable_rejection_does_not_park_the_thread_for_good(saver: SqliteSaver) -> None:
    runs: list[tuple[str, Any]] = []
    graph = _graph(saver, runs)
    inbox = MemoryAnnounce()
    started = handle_message(graph, {"thread_id": "order-1", "input": {"order_id": "o-1"}}, inbox)
    [refund] = started.question_ids

    handled = handle_message(graph, _reply(refund, {"action": "reject", "ticket": BIG}), inbox)
    assert handled.outcome is Outcome.INVALID_ANSWER
    config: Any = {"configurable": {"thread_id": "order-1"}}
    assert [i.id for i in graph.get_state(config).interrupts] == [refund]

    rejected = {"action": "reject", "ticket": str(BIG)}
    resumed = handle_message(graph, _reply(refund, rejected), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert graph.get_state(config).values["refund"] == rejected
    assert runs == []
