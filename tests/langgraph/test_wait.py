"""@wait in LangGraph nodes on a real graph: park, publish, resume, the answer rules."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from agent_wait.core import InvalidAnswer, MemoryAnnounce, WaitPolicy, derive_question_id
from agent_wait.langgraph import publish_interrupts, questions_in, wait
from tests.langgraph.conftest import INTERRUPT_ID, check_envelope, clock

POLICY = WaitPolicy(
    timeout="P3D",
    default={"action": "reject", "reason": "no response within P3D"},
    answer_ttl="PT15M",
    tags={"approver_group": "finance"},
)


class RefundState(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any
    log: Annotated[list[str], operator.add]


def refund_graph(function: Any) -> Any:
    """order -> refund node (calls ``function``) -> end, with an in-memory checkpointer."""

    def refund(state: RefundState) -> RefundState:
        return {"result": function(state["order_id"], state["amount"]), "log": ["refund node"]}

    builder = StateGraph(RefundState)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    builder.add_edge("refund", END)
    return builder.compile(checkpointer=InMemorySaver())


def config(thread_id: str = "order-4471") -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def test_park_publish_approve_runs_the_body_once(inbox: MemoryAnnounce) -> None:
    runs: list[tuple[str, int]] = []

    @wait(POLICY)
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append((order_id, amount))
        return f"refunded {amount}"

    graph = refund_graph(issue_refund)
    result = graph.invoke({"order_id": "order-4471", "amount": 41000}, config())
    assert runs == []
    [pending] = result["__interrupt__"]
    assert INTERRUPT_ID.match(pending.id)

    report = publish_interrupts(result, "order-4471", inbox, clock=clock)
    assert report.ok
    [envelope] = inbox.envelopes
    check_envelope(
        envelope,
        thread_id="order-4471",
        question_id=pending.id,
        question={"function": "issue_refund", "args": {"order_id": "order-4471", "amount": 41000}},
        allowed_actions=["approve", "reject"],
        expires_at="2026-09-14T09:00:00Z",
        default={"action": "reject", "reason": "no response within P3D"},
        answer_ttl="PT15M",
        source={"function": "issue_refund"},
        tags={"approver_group": "finance"},
    )
    assert report.question_ids == [pending.id]

    done = graph.invoke(Command(resume={pending.id: {"action": "approve"}}), config())
    assert "__interrupt__" not in done
    assert done["result"] == "refunded 41000"
    assert runs == [("order-4471", 41000)]
    assert publish_interrupts(done, "order-4471", inbox).envelopes == ()


def test_reject_returns_the_answer_and_the_body_does_not_run() -> None:
    runs: list[int] = []

    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return "refunded"

    graph = refund_graph(issue_refund)
    [pending] = graph.invoke({"order_id": "o-1", "amount": 5}, config("o-1"))["__interrupt__"]
    verdict = {"action": "reject", "reason": "over budget"}
    done = graph.invoke(Command(resume={pending.id: verdict}), config("o-1"))
    assert runs == []
    assert done["result"] == verdict  # the node received the answer in the body's place


def test_approve_with_edited_args() -> None:
    runs: list[int] = []

    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return f"refunded {amount}"

    graph = refund_graph(issue_refund)
    [pending] = graph.invoke({"order_id": "o-2", "amount": 900}, config("o-2"))["__interrupt__"]
    answer = {"action": "approve", "args": {"amount": 500}}
    done = graph.invoke(Command(resume={pending.id: answer}), config("o-2"))
    assert runs == [500]
    assert done["result"] == "refunded 500"


def test_an_answer_that_cannot_apply_is_refused_before_langgraph_saves_it() -> None:
    runs: list[int] = []

    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return f"refunded {amount}"

    graph = refund_graph(issue_refund)
    [pending] = graph.invoke({"order_id": "o-3", "amount": 900}, config("o-3"))["__interrupt__"]
    bad = {"action": "approve", "args": {"amout": 1}}
    with pytest.raises(ValueError, match="amout") as info:
        graph.invoke(Command(resume={pending.id: bad}), config("o-3"))
    assert isinstance(info.value.errors()[0]["ctx"]["error"], InvalidAnswer)  # type: ignore[attr-defined]
    # Nothing was saved: the thread is still parked on the same question and takes a good answer.
    assert [i.id for i in graph.get_state(config("o-3")).interrupts] == [pending.id]
    done = graph.invoke(Command(resume={pending.id: {"action": "approve"}}), config("o-3"))
    assert runs == [900]
    assert done["result"] == "refunded 900"


def test_decision_parameter_receives_the_whole_answer() -> None:
    seen: list[Any] = []

    @wait(decision="verdict")
    def issue_refund(order_id: str, amount: int, verdict: Any = None) -> str:
        seen.append(verdict)
        return "done"

    graph = refund_graph(issue_refund)
    [pending] = graph.invoke({"order_id": "o-4", "amount": 7}, config("o-4"))["__interrupt__"]
    assert questions_in(pending)[0].question == {
        "function": "issue_refund",
        "args": {"order_id": "o-4", "amount": 7},
    }
    verdict = {"action": "reject", "note": "ask finance", "args": {"whatever": 1}}
    graph.invoke(Command(resume={pending.id: verdict}), config("o-4"))
    assert seen == [verdict]


def test_decision_parameter_needs_a_default() -> None:
    with pytest.raises(TypeError, match="give the 'decision' parameter a default"):

        @wait
        def issue_refund(amount: int, decision: Any) -> None: ...


@pytest.mark.parametrize(("amount", "asks"), [(50, False), (5000, True)])
def test_when_predicate_both_branches(amount: int, asks: bool, inbox: MemoryAnnounce) -> None:
    runs: list[int] = []

    @wait(when=lambda order_id, amount: amount > 1000)
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return "refunded"

    graph = refund_graph(issue_refund)
    result = graph.invoke({"order_id": "o-5", "amount": amount}, config("o-5"))
    publish_interrupts(result, "o-5", inbox)
    assert bool(inbox.envelopes) is asks
    assert runs == ([] if asks else [amount])


def test_a_raising_predicate_asks() -> None:
    def broken(**_: Any) -> bool:
        raise RuntimeError("predicate bug")

    @wait(when=broken)
    def issue_refund(order_id: str, amount: int) -> str:
        return "refunded"

    result = refund_graph(issue_refund).invoke({"order_id": "o-6", "amount": 1}, config("o-6"))
    assert len(result["__interrupt__"]) == 1


def test_a_bare_interrupt_is_published_without_invented_actions(inbox: MemoryAnnounce) -> None:
    def review(state: RefundState) -> RefundState:
        return {"result": interrupt({"please": "review", "amount": state["amount"]})}

    builder = StateGraph(RefundState)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    graph = builder.compile(checkpointer=InMemorySaver())
    result = graph.invoke({"order_id": "o-7", "amount": 3}, config("o-7"))
    publish_interrupts(result, "o-7", inbox)
    [envelope] = inbox.envelopes
    check_envelope(
        envelope,
        thread_id="o-7",
        question_id=result["__interrupt__"][0].id,
        question={"please": "review", "amount": 3},
        allowed_actions=[],
        source=None,
    )
    done = graph.invoke(Command(resume={envelope.question_id: "fine"}), config("o-7"))
    assert done["result"] == "fine"


def test_questions_in_reads_every_result_form() -> None:
    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        return "refunded"

    graph = refund_graph(issue_refund)
    invoked = graph.invoke({"order_id": "o-8", "amount": 1}, config("o-8"))
    v2 = graph.invoke(None, config("o-8"), version="v2")
    snapshot = graph.get_state(config("o-8"))
    forms = [invoked, v2, snapshot, list(snapshot.interrupts), snapshot.interrupts[0]]
    ids = {q.question_id for form in forms for q in questions_in(form)}
    assert ids == {snapshot.interrupts[0].id}  # invoke(None) on a parked thread keeps the id
    assert questions_in({"result": "finished"}) == []
    with pytest.raises(TypeError, match="expected the invoke"):
        questions_in("nope")
    with pytest.raises(TypeError, match=r"interrupts\[0\]"):
        questions_in([{"value": 1}])


def test_injected_parameters_are_not_published() -> None:
    @wait
    def refund(state: RefundState, config: RunnableConfig) -> RefundState:
        return {"result": config["configurable"]["thread_id"]}

    builder = StateGraph(RefundState)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    graph = builder.compile(checkpointer=InMemorySaver())
    result = graph.invoke({"order_id": "o-9", "amount": 2}, config("o-9"))
    [question] = questions_in(result)
    assert question.question == {
        "function": "refund",
        "args": {"state": {"order_id": "o-9", "amount": 2, "log": []}},
    }
    done = graph.invoke(
        Command(resume={question.question_id: {"action": "approve"}}), config("o-9")
    )
    assert done["result"] == "o-9"


def test_async_mode_returns_pending_and_publishes_once(inbox: MemoryAnnounce) -> None:
    runs: list[int] = []

    @wait(POLICY, mode="async", announce=inbox, clock=clock)
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return "refunded"

    graph = refund_graph(issue_refund)
    result = graph.invoke({"order_id": "order-4471", "amount": 41000}, config())
    expected_id = derive_question_id(
        "order-4471", "issue_refund", {"order_id": "order-4471", "amount": 41000}
    )
    assert "__interrupt__" not in result
    assert result["result"] == {
        "status": "pending_approval",
        "question_id": expected_id,
        "function": "issue_refund",
    }
    assert runs == []
    [envelope] = inbox.envelopes
    check_envelope(
        envelope,
        thread_id="order-4471",
        question_id=expected_id,
        question={"function": "issue_refund", "args": {"order_id": "order-4471", "amount": 41000}},
        allowed_actions=["approve", "reject"],
        expires_at="2026-09-14T09:00:00Z",
        default={"action": "reject", "reason": "no response within P3D"},
        answer_ttl="PT15M",
        source={"function": "issue_refund"},
        tags={"approver_group": "finance"},
    )
    # The start message redelivered: the thread runs again and republishes the same question.
    graph.invoke({"order_id": "order-4471", "amount": 41000}, config())
    assert inbox.question_ids == [expected_id, expected_id]
    assert len({e.event_id for e in inbox.envelopes}) == 2
    assert runs == []


def test_async_mode_needs_a_thread_id(inbox: MemoryAnnounce) -> None:
    @wait(mode="async", announce=inbox)
    def issue_refund(order_id: str, amount: int) -> str:
        return "refunded"

    with pytest.raises(RuntimeError, match="outside a LangGraph run"):
        issue_refund("o", 1)
    builder = StateGraph(RefundState)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_edge(START, "refund")
    with pytest.raises(ValueError, match="no thread_id"):
        builder.compile().invoke({"order_id": "o", "amount": 1})


def test_wait_goes_below_tool() -> None:
    from langchain_core.tools import tool

    @tool
    def issue_refund(amount: int) -> str:
        """Refund."""
        return "refunded"

    with pytest.raises(TypeError, match="put it below @tool"):
        wait(issue_refund)
