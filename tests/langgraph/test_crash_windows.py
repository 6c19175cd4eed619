"""A worker that dies after the @wait step was saved: the redelivered message finishes the run."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph

from agent_wait.core import MemoryAnnounce, Outcome, WaitPolicy
from agent_wait.langgraph import ahandle_message, handle_message, wait

START_MESSAGE = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}


class WorkerKilled(BaseException):
    """What a SIGKILL looks like from inside: the run stops where it is, nothing is caught."""


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any
    receipt: str


@dataclass
class Refunds:
    """refund (gated) -> receipt; ``kill_in`` names the node that dies the next time it runs."""

    builder: StateGraph[State]
    runs: list[str] = field(default_factory=list[str])
    kill_in: set[str] = field(default_factory=set[str])

    def die_if_asked(self, node: str) -> None:
        if node in self.kill_in:
            self.kill_in.discard(node)
            raise WorkerKilled(node)


@pytest.fixture
def refunds() -> Refunds:
    made = Refunds(StateGraph(State))

    @wait(WaitPolicy(timeout="PT1H"))
    def issue_refund(order_id: str, amount: int) -> str:
        made.runs.append(f"refund {order_id} {amount}")
        return f"refunded {amount}"

    def refund(state: State) -> State:
        made.die_if_asked("refund-start")
        return {"result": issue_refund(state["order_id"], state["amount"])}

    def receipt(state: State) -> State:
        made.die_if_asked("receipt")
        made.runs.append(f"receipt {state['order_id']}")
        return {"receipt": f"sent for {state['result']}"}

    made.builder.add_node("refund", refund)
    made.builder.add_node("receipt", receipt)
    made.builder.add_edge(START, "refund")
    made.builder.add_edge("refund", "receipt")
    return made


@pytest.fixture
def checkpoints(tmp_path: Path) -> Iterator[SqliteSaver]:
    connection = sqlite3.connect(tmp_path / "checkpoints.sqlite3", check_same_thread=False)
    yield SqliteSaver(connection)
    connection.close()


def test_an_answer_redelivered_after_the_step_was_saved_continues_the_run(
    refunds: Refunds, checkpoints: SqliteSaver
) -> None:
    graph = refunds.builder.compile(checkpointer=checkpoints)
    announce = MemoryAnnounce()
    [question_id] = handle_message(graph, START_MESSAGE, announce).question_ids
    answer = {
        "thread_id": "order-4471",
        "question_id": question_id,
        "answer": {"action": "approve"},
    }

    refunds.kill_in.add("receipt")
    with pytest.raises(WorkerKilled):
        handle_message(graph, answer, announce)
    config = {"configurable": {"thread_id": "order-4471"}}
    assert graph.get_state(config).next == ("receipt",)  # the refund step was saved
    assert refunds.runs == ["refund order-4471 41000"]

    again = handle_message(graph, answer, announce)
    assert again.outcome is Outcome.CONTINUED, again.detail
    assert again.ran
    assert again.result["receipt"] == "sent for refunded 41000"
    assert refunds.runs == ["refund order-4471 41000", "receipt order-4471"]
    assert graph.get_state(config).next == ()

    # The thread finished: a third copy is the duplicate it always was.
    assert handle_message(graph, answer, announce).outcome is Outcome.DUPLICATE
    assert refunds.runs == ["refund order-4471 41000", "receipt order-4471"]


def test_a_start_message_redelivered_after_a_crash_continues_without_running_twice(
    refunds: Refunds, checkpoints: SqliteSaver
) -> None:
    graph = refunds.builder.compile(checkpointer=checkpoints)
    announce = MemoryAnnounce()
    refunds.kill_in.add("refund-start")
    with pytest.raises(WorkerKilled):
        handle_message(graph, START_MESSAGE, announce)
    config = {"configurable": {"thread_id": "order-4471"}}
    assert graph.get_state(config).next == ("refund",)  # the input step was saved
    assert announce.envelopes == []

    again = handle_message(graph, START_MESSAGE, announce)
    assert again.outcome is Outcome.CONTINUED, again.detail
    assert [e.source.function for e in announce.envelopes if e.source] == ["issue_refund"]
    # Parked on the question, not started a second time from the input.
    assert handle_message(graph, START_MESSAGE, announce).outcome is Outcome.REPUBLISHED
    assert len(graph.get_state(config).interrupts) == 1


async def test_async_an_answer_redelivered_after_the_step_was_saved_continues_the_run(
    refunds: Refunds, tmp_path: Path
) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.sqlite3")) as saver:
        graph = refunds.builder.compile(checkpointer=saver)
        announce = MemoryAnnounce()
        started = await ahandle_message(graph, START_MESSAGE, announce)
        [question_id] = started.question_ids
        answer = {
            "thread_id": "order-4471",
            "question_id": question_id,
            "answer": {"action": "approve"},
        }
        refunds.kill_in.add("receipt")
        with pytest.raises(WorkerKilled):
            await ahandle_message(graph, answer, announce)
        again = await ahandle_message(graph, answer, announce)
        assert again.outcome is Outcome.CONTINUED, again.detail
        assert refunds.runs == ["refund order-4471 41000", "receipt order-4471"]
        state = await graph.aget_state({"configurable": {"thread_id": "order-4471"}})
        assert state.next == ()
