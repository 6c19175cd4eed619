"""A worker that dies after the @wait step was saved: the redelivered message finishes the run."""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph

from agent_wait.core import (
    MemoryAnnounce,
    Outcome,
    SqliteAnnounce,
    SqliteEntry,
    SqliteLedger,
    SqliteQuestionStore,
    WaitPolicy,
)
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.host import answer
from agent_wait.host._cli import main
from agent_wait.langgraph import ahandle_message, handle_message, wait
from tests.redrive import redriven_after_a_lost_answer

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


@dataclass
class Gated:
    """refund (gated, with a kill switch inside and right after the body) -> receipt."""

    graph: Any
    effects: list[str]
    kill_in: set[str]


def gated(checkpoints: SqliteSaver, *, once: bool = True) -> Gated:
    effects: list[str] = []
    kill_in: set[str] = set()

    def die_if_asked(where: str) -> None:
        if where in kill_in:
            kill_in.discard(where)
            raise WorkerKilled(where)

    @wait(WaitPolicy(timeout="PT1H", tags={"approver_group": "finance"}), once=once)
    def issue_refund(order_id: str, amount: int) -> str:
        effects.append(f"refund {order_id} {amount}")  # the effect happens first...
        die_if_asked("body")  # ...then the worker dies before the body returns
        return f"refunded {amount}"

    def refund(state: State) -> State:
        result = issue_refund(state["order_id"], state["amount"])
        die_if_asked("after-body")  # the body returned; the step is not saved yet
        return {"result": result}

    builder = StateGraph(State)
    builder.add_node("refund", refund)
    builder.add_node("receipt", lambda s: {"receipt": f"sent for {s['result']}"})
    builder.add_edge(START, "refund")
    builder.add_edge("refund", "receipt")
    return Gated(builder.compile(checkpointer=checkpoints), effects, kill_in)


def approve(question_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "thread_id": "order-4471",
        "question_id": question_id,
        "answer": {"action": "approve", **extra},
    }


def reply(question_id: str, answer: Any) -> dict[str, Any]:
    return {"thread_id": "order-4471", "question_id": question_id, "answer": answer}


def test_a_body_that_returned_before_the_crash_is_not_run_again(
    checkpoints: SqliteSaver,
) -> None:
    app = gated(checkpoints)
    [question_id] = handle_message(app.graph, START_MESSAGE, MemoryAnnounce()).question_ids
    app.kill_in.add("after-body")
    with pytest.raises(WorkerKilled):
        handle_message(app.graph, approve(question_id), MemoryAnnounce())
    # The step was not saved: the thread is still parked on the approval.
    assert [
        i.id for i in app.graph.get_state({"configurable": {"thread_id": "order-4471"}}).interrupts
    ] == [question_id]

    again = handle_message(app.graph, approve(question_id), MemoryAnnounce())
    assert again.outcome is Outcome.RESUMED, again.detail
    assert again.result["receipt"] == "sent for refunded 41000"  # the recorded result
    assert app.effects == ["refund order-4471 41000"]


def test_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    checkpoints: SqliteSaver,
) -> None:
    app = gated(checkpoints)
    announce = MemoryAnnounce()
    [question_id] = handle_message(app.graph, START_MESSAGE, announce).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.graph, approve(question_id), announce)
    assert app.effects == ["refund order-4471 41000"]

    # The redelivery runs nothing: whether the refund happened is a person's to say.
    again = handle_message(app.graph, approve(question_id), announce)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert app.effects == ["refund order-4471 41000"]
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert doubt.question["text"].startswith(
        "did `issue_refund(order_id='order-4471', amount=41000)` happen?"
    )
    assert doubt.question["args"] == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
        "attempt": 0,
    }
    assert doubt.allowed_actions == ["yes", "no"]
    assert doubt.tags == {"approver_group": "finance"}
    assert doubt.source is not None
    assert doubt.source.function == "issue_refund"
    # Another copy of the approval asks nothing new and runs nothing.
    assert handle_message(app.graph, approve(question_id), announce).outcome is Outcome.DUPLICATE
    # Neither yes nor no is refused before anything is saved; the question stays answerable.
    refused = handle_message(app.graph, reply(doubt.question_id, {"action": "approve"}), announce)
    assert refused.outcome is Outcome.INVALID_ANSWER, refused.detail
    assert "'yes'" in (refused.detail or "")

    done = handle_message(app.graph, reply(doubt.question_id, {"action": "no"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result["receipt"] == "sent for refunded 41000"
    assert app.effects == ["refund order-4471 41000", "refund order-4471 41000"]
    assert (
        handle_message(app.graph, reply(doubt.question_id, {"action": "no"}), announce).outcome
        is Outcome.DUPLICATE
    )
    assert len(app.effects) == 2


def test_a_crash_inside_the_body_answered_yes_records_it_done_with_the_given_result(
    checkpoints: SqliteSaver,
) -> None:
    app = gated(checkpoints)
    announce = MemoryAnnounce()
    [question_id] = handle_message(app.graph, START_MESSAGE, announce).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.graph, approve(question_id), announce)
    [doubt] = handle_message(app.graph, approve(question_id), announce).report.envelopes

    answered = {"action": "yes", "result": "refunded 41000 (confirmed by hand)"}
    done = handle_message(app.graph, reply(doubt.question_id, answered), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result["receipt"] == "sent for refunded 41000 (confirmed by hand)"
    assert app.effects == ["refund order-4471 41000"]


def test_a_crash_in_the_run_after_no_asks_again_and_never_runs_twice_unasked(
    checkpoints: SqliteSaver,
) -> None:
    app = gated(checkpoints)
    announce = MemoryAnnounce()
    [question_id] = handle_message(app.graph, START_MESSAGE, announce).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.graph, approve(question_id), announce)
    [first] = handle_message(app.graph, approve(question_id), announce).report.envelopes
    app.kill_in.add("body")  # the run that "no" allows dies inside the body too
    with pytest.raises(WorkerKilled):
        handle_message(app.graph, reply(first.question_id, {"action": "no"}), announce)
    assert len(app.effects) == 2

    again = handle_message(app.graph, reply(first.question_id, {"action": "no"}), announce)
    assert again.outcome is Outcome.RESUMED, again.detail
    [second] = again.report.envelopes
    assert second.question["args"]["attempt"] == 1
    assert second.question_id != first.question_id
    assert len(app.effects) == 2
    done = handle_message(app.graph, reply(second.question_id, {"action": "yes"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert len(app.effects) == 2


def test_once_false_keeps_the_framework_semantics(checkpoints: SqliteSaver) -> None:
    app = gated(checkpoints, once=False)
    [question_id] = handle_message(app.graph, START_MESSAGE, MemoryAnnounce()).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.graph, approve(question_id), MemoryAnnounce())
    again = handle_message(app.graph, approve(question_id), MemoryAnnounce())
    assert again.outcome is Outcome.RESUMED, again.detail
    assert app.effects == ["refund order-4471 41000", "refund order-4471 41000"]


async def test_async_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    tmp_path: Path,
) -> None:
    effects: list[str] = []
    kill = {"body"}

    @wait(WaitPolicy(timeout="PT1H"))
    async def issue_refund(order_id: str, amount: int) -> str:
        effects.append(f"refund {order_id} {amount}")
        if kill:
            kill.clear()
            raise WorkerKilled("body")
        return f"refunded {amount}"

    async def refund(state: State) -> State:
        return {"result": await issue_refund(state["order_id"], state["amount"])}

    builder = StateGraph(State)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.sqlite3")) as saver:
        graph = builder.compile(checkpointer=saver)
        announce = MemoryAnnounce()
        [question_id] = (await ahandle_message(graph, START_MESSAGE, announce)).question_ids
        with pytest.raises(WorkerKilled):
            await ahandle_message(graph, approve(question_id), announce)
        again = await ahandle_message(graph, approve(question_id), announce)
        [doubt] = again.report.envelopes
        assert doubt.question["function"] == "did_it_happen"
        assert effects == ["refund order-4471 41000"]
        done = await ahandle_message(graph, reply(doubt.question_id, {"action": "no"}), announce)
        assert done.outcome is Outcome.RESUMED, done.detail
        assert done.result["result"] == "refunded 41000"
        assert effects == ["refund order-4471 41000", "refund order-4471 41000"]


def test_sweep_redrives_an_answer_whose_run_a_crash_left_unfinished_once(
    refunds: Refunds, checkpoints: SqliteSaver, tmp_path: Path
) -> None:
    graph = refunds.builder.compile(checkpointer=checkpoints)
    inbox = tmp_path / "inbox.sqlite3"
    [question_id] = handle_message(graph, START_MESSAGE, SqliteAnnounce(inbox)).question_ids

    def crash(message: Mapping[str, Any]) -> None:
        # The worker dies after the refund step was saved.
        refunds.kill_in.add("receipt")
        with pytest.raises(WorkerKilled):
            handle_message(graph, message, SqliteAnnounce(inbox))

    again = redriven_after_a_lost_answer(inbox, tmp_path / "messages.sqlite3", question_id, crash)
    handled = handle_message(graph, again, SqliteAnnounce(inbox))
    assert handled.outcome is Outcome.CONTINUED, handled.detail
    assert refunds.runs == ["refund order-4471 41000", "receipt order-4471"]


def test_cli_sweep_redrive_after_reports_what_it_sent_again(
    refunds: Refunds, checkpoints: SqliteSaver, tmp_path: Path
) -> None:
    graph = refunds.builder.compile(checkpointer=checkpoints)
    inbox = default_inbox_path()
    [question_id] = handle_message(graph, START_MESSAGE, SqliteAnnounce(inbox)).question_ids
    answered_at = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
    with SqliteQuestionStore(inbox) as store, SqliteEntry() as messages:
        answer(question_id, "approve", by="alice", store=store, entry=messages, at=answered_at)
        [received] = messages.receive(1)
        assert messages.ack(received)  # lost before any worker ran it
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["sweep", "--now", "2026-09-11T09:07:00Z", "--redrive-after", "PT5M"])
    assert code == 0, err.getvalue()
    assert out.getvalue() == (
        f"redriven {question_id} (thread order-4471, answered by alice at "
        "2026-09-11T09:00:00Z): its answer sent again\n"
    )
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        assert main(["sweep", "--redrive-after", "soon"]) == 2
    assert "--redrive-after" in err.getvalue()
    with SqliteEntry() as messages:
        [again] = messages.receive(1)
    assert handle_message(graph, again.message, MemoryAnnounce()).outcome is Outcome.RESUMED


def test_a_body_that_raises_releases_its_record_and_a_retry_runs_it(
    checkpoints: SqliteSaver, tmp_path: Path
) -> None:
    runs: list[str] = []
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3")

    @wait(WaitPolicy(timeout="PT1H"), ledger=ledger)
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(order_id)
        if len(runs) == 1:
            raise ConnectionError("payment service unreachable")
        return f"refunded {amount}"

    builder = StateGraph(State)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_edge(START, "refund")
    graph = builder.compile(checkpointer=checkpoints)
    [question_id] = handle_message(graph, START_MESSAGE, MemoryAnnounce()).question_ids
    failed = handle_message(graph, approve(question_id), MemoryAnnounce())
    assert failed.outcome is Outcome.RESUME_FAILED, failed.detail
    assert ledger.records() == []  # it raised in the open: nothing in doubt
    done = handle_message(graph, approve(question_id), MemoryAnnounce())
    assert done.outcome is Outcome.RESUMED, done.detail
    assert runs == ["order-4471", "order-4471"]
    [record] = ledger.records()
    assert (record.attempt, record.done, record.result) == (0, True, "refunded 41000")
    ledger.close()


def test_once_and_ledger_are_checked_when_decorating() -> None:
    with pytest.raises(TypeError, match="once: expected True or False, got 'yes'"):
        wait(once="yes")(lambda order_id: order_id)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="ledger: expected an ExecutionLedger or None"):
        wait(ledger="ledger.sqlite3")(lambda order_id: order_id)  # pyright: ignore[reportArgumentType]
