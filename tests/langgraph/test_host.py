"""handle_message: the whole host, and the guarantees LangGraph leaves to it."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import ValidationError

from agent_wait.core import (
    AnnounceFailed,
    Answer,
    BaseAnnounce,
    MemoryAnnounce,
    Outcome,
    WaitEnvelope,
    WaitPolicy,
)
from agent_wait.host import QuestionNotPending, plan
from agent_wait.langgraph import (
    InterruptRoutingError,
    handle_message,
    resume_command,
    wait,
)
from agent_wait.langgraph import _host as langgraph_host  # pyright: ignore[reportPrivateUsage]
from agent_wait.langgraph._host import _SyncHost  # pyright: ignore[reportPrivateUsage]
from tests.langgraph.conftest import answer, check_envelope, clock, namespace


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any
    first: Any
    second: Any


class Counts:
    def __init__(self) -> None:
        self.node = 0
        self.body = 0


def refund_graph(counts: Counts, policy: WaitPolicy | None = None) -> Any:
    @wait(policy)
    def issue_refund(order_id: str, amount: int) -> str:
        counts.body += 1
        return f"refunded {amount} on {order_id}"

    def refund(state: State, config: RunnableConfig) -> State:
        counts.node += 1
        return {"result": issue_refund(state["order_id"], state["amount"])}

    builder = StateGraph(State)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    builder.add_edge("refund", END)
    return builder.compile(checkpointer=InMemorySaver())


START_MESSAGE = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}
UNASKED = "0123456789abcdef0123456789abcdef"


def test_the_whole_loop_with_redeliveries_duplicates_and_late_answers(
    inbox: MemoryAnnounce,
) -> None:
    counts = Counts()
    policy = WaitPolicy(
        timeout="P3D", default={"action": "reject"}, tags={"approver_group": "finance"}
    )
    graph = refund_graph(counts, policy)

    started = handle_message(graph, START_MESSAGE, inbox, clock=clock)
    assert started.outcome is Outcome.STARTED
    assert started.ran
    assert started.parked
    [question_id] = started.question_ids
    assert (
        question_id
        == graph.get_state({"configurable": {"thread_id": "order-4471"}}).interrupts[0].id
    )
    check_envelope(
        inbox.envelopes[0],
        thread_id="order-4471",
        question_id=question_id,
        question={"function": "issue_refund", "args": {"order_id": "order-4471", "amount": 41000}},
        allowed_actions=["approve", "reject"],
        expires_at="2026-09-14T09:00:00Z",
        default={"action": "reject"},
        source={"function": "issue_refund"},
        tags={"approver_group": "finance"},
        context={"framework": "langgraph", "node": "refund", "namespace": namespace("refund")},
    )
    assert (counts.node, counts.body) == (1, 0)

    # The start message redelivered while parked: nothing runs, the same question is republished.
    again = handle_message(graph, json.dumps(START_MESSAGE), inbox, clock=clock)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.result is None
    assert not again.ran
    assert again.question_ids == [question_id]
    assert inbox.question_ids == [question_id, question_id]
    assert inbox.envelopes[0].event_id != inbox.envelopes[1].event_id
    assert (counts.node, counts.body) == (1, 0)

    resumed = handle_message(graph, answer(inbox.envelopes[0], {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert resumed.result["result"] == "refunded 41000 on order-4471"
    assert not resumed.parked
    assert (counts.node, counts.body) == (2, 1)

    duplicate = handle_message(graph, answer(inbox.envelopes[0], {"action": "approve"}), inbox)
    late = handle_message(graph, answer(inbox.envelopes[1], {"action": "reject"}), inbox)
    for handled in (duplicate, late):
        assert handled.outcome is Outcome.DUPLICATE
        assert handled.result is None
        assert handled.report.envelopes == ()
        assert question_id in (handled.detail or "")
    assert (counts.node, counts.body) == (2, 1)
    assert len(inbox.envelopes) == 2


def test_unknown_questions_run_nothing(inbox: MemoryAnnounce) -> None:
    counts = Counts()
    graph = refund_graph(counts)
    handle_message(graph, START_MESSAGE, inbox)
    for question_id in (UNASKED, "not-a-langgraph-id"):
        handled = handle_message(
            graph,
            {
                "thread_id": "order-4471",
                "question_id": question_id,
                "answer": {"action": "approve"},
            },
        )
        assert handled.outcome is Outcome.UNKNOWN_QUESTION
        assert "never asked" in (handled.detail or "")
    never = handle_message(graph, {"thread_id": "elsewhere", "question_id": UNASKED, "answer": 1})
    assert never.outcome is Outcome.UNKNOWN_QUESTION
    assert (counts.node, counts.body) == (1, 0)
    # Still parked on its own question, which still works.
    resumed = handle_message(graph, answer(inbox.envelopes[0], {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert counts.body == 1


def two_question_graph(log: list[Any]) -> Any:
    """One node asking two bare questions in a row (no @wait: plain LangGraph interrupts)."""

    def ask_twice(state: State) -> State:
        first = interrupt("first?")
        log.append(("first", first))
        second = interrupt("second?")
        log.append(("second", second))
        return {"first": first, "second": second}

    builder = StateGraph(State)
    builder.add_node("ask", ask_twice)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=InMemorySaver())


def test_a_stale_id_does_not_answer_the_next_question_of_the_same_node(
    inbox: MemoryAnnounce,
) -> None:
    # Plain LangGraph resumes interrupts by call order: the stale id answers the node's next interrupt.
    plain_log: list[Any] = []
    plain = two_question_graph(plain_log)
    cfg: RunnableConfig = {"configurable": {"thread_id": "plain"}}
    first_id = plain.invoke({}, cfg)["__interrupt__"][0].id
    plain.invoke(Command(resume={first_id: "yes"}), cfg)
    plain.invoke(Command(resume={first_id: "stale"}), cfg)
    assert ("second", "stale") in plain_log

    log: list[Any] = []
    graph = two_question_graph(log)
    started = handle_message(graph, {"thread_id": "t", "input": {}}, inbox)
    first = started.question_ids[0]
    moved = handle_message(graph, {"thread_id": "t", "question_id": first, "answer": "yes"}, inbox)
    assert moved.outcome is Outcome.RESUMED
    [second] = moved.question_ids
    assert second != first
    stale = handle_message(
        graph, {"thread_id": "t", "question_id": first, "answer": "stale"}, inbox
    )
    assert stale.outcome is Outcome.DUPLICATE
    assert second in (stale.detail or "")  # it says what the thread is parked on now
    assert ("second", "stale") not in log
    done = handle_message(graph, {"thread_id": "t", "question_id": second, "answer": "ok"}, inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.result == {"first": "yes", "second": "ok"}
    # Both ids stay known after the thread finished: a late answer to either is a duplicate.
    for question_id in (first, second):
        late = handle_message(graph, {"thread_id": "t", "question_id": question_id, "answer": "x"})
        assert late.outcome is Outcome.DUPLICATE
    assert log == [("first", "yes"), ("first", "yes"), ("second", "ok")]


def test_several_wait_calls_in_one_node_are_asked_in_turn_and_run_once(
    inbox: MemoryAnnounce,
) -> None:
    # LangGraph would hand the second answer to whichever call runs second and run the first
    # approved refund again; each call takes the answer addressed to it and runs once.
    runs: list[int] = []

    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return f"refunded {amount}"

    def refund_all(state: State) -> State:
        return {"result": [issue_refund(state["order_id"], a) for a in (10, 20)]}

    builder = StateGraph(State)
    builder.add_node("refund_all", refund_all)
    builder.add_edge(START, "refund_all")
    graph = builder.compile(checkpointer=InMemorySaver())
    first = handle_message(graph, {"thread_id": "t", "input": {"order_id": "o"}}, inbox)
    [ask_10] = first.report.envelopes
    assert ask_10.question["args"] == {"order_id": "o", "amount": 10}
    second = handle_message(graph, answer(ask_10, {"action": "approve"}), inbox)
    assert second.outcome is Outcome.RESUMED
    [ask_20] = second.report.envelopes
    assert ask_20.question["args"] == {"order_id": "o", "amount": 20}
    assert ask_20.question_id != ask_10.question_id
    assert runs == [10]
    done = handle_message(graph, answer(ask_20, "not today"), inbox)
    assert done.outcome is Outcome.RESUMED
    assert not done.parked
    assert done.result["result"] == ["refunded 10", "not today"]
    assert runs == [10]
    for late in (ask_10, ask_20):
        assert (
            handle_message(graph, answer(late, {"action": "approve"})).outcome is Outcome.DUPLICATE
        )
    assert runs == [10]


@pytest.mark.parametrize("bare_first", [False, True], ids=["wait_then_bare", "bare_then_wait"])
def test_a_bare_interrupt_and_a_wait_call_in_one_node_each_get_their_answer(
    inbox: MemoryAnnounce, bare_first: bool
) -> None:
    runs: list[str] = []

    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(order_id)
        return "refunded"

    def node(state: State) -> State:
        if bare_first:
            note = interrupt("and the note?")
            return {"result": [note, issue_refund(state["order_id"], 10)]}
        done = issue_refund(state["order_id"], 10)
        return {"result": [done, interrupt("and the note?")]}

    builder = StateGraph(State)
    builder.add_node("refund", node)
    builder.add_edge(START, "refund")
    graph = builder.compile(checkpointer=InMemorySaver())
    handled = handle_message(graph, {"thread_id": "t", "input": {"order_id": "o"}}, inbox)
    replies = {"and the note?": "a note"}
    while handled.parked:
        envelope = next(e for e in inbox.envelopes if e.question_id == handled.question_ids[0])
        value = replies.get(envelope.question) if isinstance(envelope.question, str) else None
        handled = handle_message(graph, answer(envelope, value or {"action": "approve"}), inbox)
        assert handled.outcome is Outcome.RESUMED
    expected = ["a note", "refunded"] if bare_first else ["refunded", "a note"]
    assert handled.result["result"] == expected
    assert runs == ["o"]


def test_an_unusable_answer_is_refused_and_the_thread_still_takes_a_good_one(
    inbox: MemoryAnnounce,
) -> None:
    counts = Counts()
    graph = refund_graph(counts)
    handle_message(graph, START_MESSAGE, inbox)
    bad = handle_message(graph, answer(inbox.envelopes[0], {"action": "approve", "args": "x"}))
    assert bad.outcome is Outcome.INVALID_ANSWER
    assert "answer.args" in (bad.detail or "")
    assert counts.body == 0
    good = handle_message(graph, answer(inbox.envelopes[0], {"action": "approve"}), inbox)
    assert good.outcome is Outcome.RESUMED
    assert counts.body == 1


def test_the_question_id_is_stable_and_the_answer_is_addressed(inbox: MemoryAnnounce) -> None:
    counts = Counts()
    graph = refund_graph(counts)
    handle_message(graph, START_MESSAGE, inbox)
    envelope = inbox.envelopes[0]
    reply = answer(envelope, {"action": "approve"})
    assert resume_command(reply).resume == {envelope.question_id: {"action": "approve"}}
    cfg: RunnableConfig = {"configurable": {"thread_id": "order-4471"}}
    addressed = resume_command(reply, pending=graph.get_state(cfg)).resume
    assert addressed[envelope.question_id]["__agent_wait__"]["answer"] == {"action": "approve"}
    with pytest.raises(ValueError, match="not a LangGraph interrupt id"):
        resume_command({**reply, "question_id": "abc"})
    with pytest.raises(ValueError, match="question_id: missing"):
        resume_command(START_MESSAGE)
    done = graph.invoke(resume_command(reply, pending=graph.get_state(cfg)), cfg)
    assert done["result"] == "refunded 41000 on order-4471"


def test_options_reply_to_and_config(inbox: MemoryAnnounce) -> None:
    seen: list[Any] = []

    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        return "refunded"

    def refund(state: State, config: RunnableConfig) -> State:
        seen.append(config["configurable"].get("tenant"))
        return {"result": issue_refund(state["order_id"], state["amount"])}

    builder = StateGraph(State)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    graph = builder.compile(checkpointer=InMemorySaver())
    reply_to = {"queue": "approvals-in"}
    handled = handle_message(
        graph, START_MESSAGE, inbox, reply_to=reply_to, config={"configurable": {"tenant": "acme"}}
    )
    assert handled.report.envelopes[0].reply_to == reply_to
    assert seen == ["acme"]
    with pytest.raises(ValueError, match=r"config\.configurable\.thread_id"):
        handle_message(graph, START_MESSAGE, inbox, config={"configurable": {"thread_id": "other"}})


def test_bad_input_gets_a_clear_error(inbox: MemoryAnnounce) -> None:
    builder = StateGraph(State)
    builder.add_node("noop", lambda s: {})
    builder.add_edge(START, "noop")
    with pytest.raises(ValueError, match="checkpointer"):
        handle_message(builder.compile(), START_MESSAGE, inbox)
    with pytest.raises(TypeError, match="compiled LangGraph graph"):
        handle_message(object(), START_MESSAGE, inbox)
    graph = builder.compile(checkpointer=InMemorySaver())
    with pytest.raises(ValidationError, match="thread_id"):
        handle_message(graph, {"input": {}}, inbox)
    with pytest.raises(ValidationError, match="answer"):
        handle_message(graph, b'{"thread_id": "t", "question_id": "q"}', inbox)


class Broken(BaseAnnounce):
    """Fault injection: a transport that refuses every envelope."""

    def deliver(self, envelope: WaitEnvelope) -> None:
        raise ConnectionError("transport down")


def test_announcer_failures_are_reported_and_strict_raises_after_parking(
    inbox: MemoryAnnounce,
) -> None:
    counts = Counts()
    graph = refund_graph(counts)
    handled = handle_message(graph, START_MESSAGE, [Broken(), inbox])
    assert handled.outcome is Outcome.STARTED
    assert not handled.report.ok
    assert [d.ok for d in handled.report.deliveries] == [False, True]
    with pytest.raises(AnnounceFailed, match="transport down"):
        handle_message(graph, START_MESSAGE, [Broken(), inbox], strict=True)
    # Still parked on the same question, published to the working announcer every time.
    assert len(set(inbox.question_ids)) == 1
    assert len(inbox.question_ids) == 2


def test_an_answer_racing_another_handler_answers_nothing_else(
    inbox: MemoryAnnounce, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two handlers got the same answer; the second read the state before the first resumed.
    # LangGraph's strict resume refuses the stale id, which would otherwise answer the node's
    # next question (LangGraph matches resume values to interrupts by call order).
    log: list[Any] = []
    graph = two_question_graph(log)
    handle_message(graph, {"thread_id": "t", "input": {}}, inbox)
    first = inbox.envelopes[0]
    stale_state = langgraph_host._read(graph, {"configurable": {"thread_id": "t"}})
    assert handle_message(graph, answer(first, "yes"), inbox).outcome is Outcome.RESUMED
    monkeypatch.setattr(
        langgraph_host, "_read", lambda graph, config, **_: stale_state
    )  # fault injection: the host reads the state as it was before the first resume
    raced = handle_message(graph, answer(first, "yes again"), inbox)
    assert raced.outcome is Outcome.DUPLICATE
    assert log == [("first", "yes")]


def test_an_answer_taken_by_a_concurrent_handler_is_a_duplicate(inbox: MemoryAnnounce) -> None:
    # Two handlers read the same parked state; the first resumes. The second one's resume is
    # strict, so LangGraph refuses it before writing anything, and core reports a duplicate.
    counts = Counts()
    graph = refund_graph(counts)
    envelope = handle_message(graph, START_MESSAGE, inbox).report.envelopes[0]
    late = _SyncHost(graph, None)
    steps = plan(late, Answer(thread_id="order-4471", question_id=envelope.question_id, answer={}))
    name, args = steps.send(None)
    name, args = steps.send(late.load(*args))
    assert name == "resume"
    assert handle_message(graph, answer(envelope, {"action": "approve"}), inbox).ran
    with pytest.raises(QuestionNotPending) as refused:
        late.resume(*args)
    with pytest.raises(StopIteration) as done:
        steps.throw(refused.value)
    handled = done.value.value
    assert handled.outcome is Outcome.DUPLICATE
    assert "answered meanwhile" in (handled.detail or "")
    assert (counts.node, counts.body) == (2, 1)


def test_a_bare_interrupt_that_took_a_wait_answer_stops_the_run(inbox: MemoryAnnounce) -> None:
    # LangGraph hands a bare interrupt() the answer at its position, whatever it is. When the
    # order of the calls changes between runs (threads, or code like this), it can take the
    # answer addressed to a @wait call; the @wait call then stops the run instead of going on.
    runs: list[str] = []
    node_runs: list[int] = []

    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(order_id)
        return "refunded"

    def node(state: State) -> State:
        node_runs.append(1)
        if len(node_runs) == 1:
            return {"result": [issue_refund(state["order_id"], 10), interrupt("note?")]}
        note = interrupt("note?")
        return {"result": [note, issue_refund(state["order_id"], 10)]}

    builder = StateGraph(State)
    builder.add_node("refund", node)
    builder.add_edge(START, "refund")
    graph = builder.compile(checkpointer=InMemorySaver())
    handle_message(graph, {"thread_id": "t", "input": {"order_id": "o"}}, inbox)
    with pytest.raises(InterruptRoutingError, match="bare interrupt\\(\\) in the same task took"):
        handle_message(graph, answer(inbox.envelopes[0], {"action": "approve"}), inbox)
    assert runs == []
    assert len(inbox.envelopes) == 1


def test_a_result_the_checkpointer_cannot_save_is_not_kept(
    inbox: MemoryAnnounce, caplog: pytest.LogCaptureFixture
) -> None:
    # Keeping the result would fail the task's save; the body runs again instead, as it would
    # without agent-wait, and the run goes on.
    runs: list[int] = []

    class Receipt:  # not serializable by LangGraph's checkpointer
        def __init__(self, amount: int) -> None:
            self.amount = amount

    @wait
    def issue_refund(order_id: str, amount: int) -> Receipt:
        runs.append(amount)
        return Receipt(amount)

    def refund_all(state: State) -> State:
        receipts = [issue_refund(state["order_id"], a) for a in (10, 20)]
        return {"result": [str(r.amount) for r in receipts]}

    builder = StateGraph(State)
    builder.add_node("refund_all", refund_all)
    builder.add_edge(START, "refund_all")
    graph = builder.compile(checkpointer=InMemorySaver())
    handled = handle_message(graph, {"thread_id": "t", "input": {"order_id": "o"}}, inbox)
    while handled.parked:
        envelope = next(e for e in inbox.envelopes if e.question_id == handled.question_ids[0])
        handled = handle_message(graph, answer(envelope, {"action": "approve"}), inbox)
    assert handled.result["result"] == ["10", "20"]
    assert runs == [10, 10, 20]
    assert (
        "'issue_refund' in node 'refund_all': its result (Receipt) cannot be saved" in caplog.text
    )
