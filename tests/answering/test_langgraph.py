"""LangGraph and LangChain, answered with ``agent-wait answer`` as a person would.

Each case is one of the ways an answer went wrong: it is refused when it is given, with a message
naming the field and the form that works, and that form then resumes the run; a guarded step
never runs on a refusal or a ``reject``. The worker is ``agent_wait.langgraph.serve`` on the
embedded sqlite entry point, the questions are in the embedded sqlite inbox.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from agent_wait.core import WaitPolicy
from agent_wait.langgraph import serve, wait
from tests.answering.conftest import Deployment
from tests.langgraph.conftest import calls, model

Deploy = Callable[..., Deployment]


class Transfer(TypedDict, total=False):
    account: str
    amount: int
    done: str


def transfer_graph(ran: list[Any]) -> Any:
    """A ``@wait`` transfer a person may approve (with edited arguments) or reject."""

    @wait(WaitPolicy(timeout="P1D"))
    def issue_transfer(account: str, amount: int) -> str:
        ran.append((account, amount))
        return f"sent {amount} to {account}"

    builder = StateGraph(Transfer)
    builder.add_node("pay", lambda s: {"done": issue_transfer(s["account"], s["amount"])})
    builder.add_edge(START, "pay")
    builder.add_edge("pay", END)
    return builder.compile(checkpointer=InMemorySaver())


def refused(done: Any, *texts: str) -> str:
    """The CLI refused: exit 1, nothing printed on stdout, every text in the message."""
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    for text in texts:
        assert text in done.stderr
    return done.stderr


def accepted(done: Any, question_id: str) -> None:
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith(f"{question_id} (thread ")
    assert "answered by alice" in done.stdout


# --- 1. an answer the host would refuse is refused where it is given ------------------------------


def test_an_edit_naming_an_unknown_argument_is_refused_and_the_right_one_runs(
    deploy: Deploy,
) -> None:
    ran: list[Any] = []
    host = deploy(serve, transfer_graph(ran))
    host.start("pay-1", {"account": "DE44 5001", "amount": 120})
    assert host.handled("pay-1") == "started"
    question_id = host.question("pay-1").envelope.question_id

    done = host.answer(question_id, "approve", "--answer", '{"args": {"amount_eur": 95}}')
    message = refused(done, f"question {question_id} (thread pay-1)", "answer.args", "amount_eur")
    assert f"send it with: agent-wait answer {question_id} approve" in message
    assert host.stored(question_id).is_open

    accepted(
        host.answer(question_id, "approve", "--answer", '{"args": {"amount": 95}}'), question_id
    )
    assert host.handled("pay-1") == "resumed"
    assert ran == [("DE44 5001", 95)]


@pytest.mark.parametrize(
    ("typed", "problem"),
    [
        pytest.param("NaN", "not a finite number", id="nan"),
        pytest.param("Infinity", "not a finite number", id="infinity"),
        pytest.param("1e400", "not a finite number", id="1e400"),
        pytest.param(str(2**64), "outside the signed 64-bit range", id="beyond-64-bits"),
    ],
)
def test_an_amount_no_framework_can_store_is_refused_before_it_is_sent(
    deploy: Deploy, typed: str, problem: str
) -> None:
    ran: list[Any] = []
    host = deploy(serve, transfer_graph(ran))
    host.start("pay-2", {"account": "DE44 5001", "amount": 120})
    assert host.handled("pay-2") == "started"
    question_id = host.question("pay-2").envelope.question_id

    typed_answer = f'{{"action": "approve", "args": {{"amount": {typed}}}}}'
    refused(host.answer(question_id, "--json", typed_answer), "answer.args.amount", problem)
    assert host.stored(question_id).is_open

    accepted(host.answer(question_id, "reject"), question_id)
    assert host.handled("pay-2") == "resumed"
    assert ran == []


# --- 2. reject on a yes/no interrupt never runs the guarded step ----------------------------------


class Wire(TypedDict, total=False):
    amount: int
    wired: bool


def yes_no_graph(ran: list[Any]) -> Any:
    """LangGraph's documented approval: ``if interrupt(...):`` before the side effect."""

    def approve_wire(state: Wire) -> Wire:
        if interrupt(f"Wire {state['amount']} EUR?"):
            ran.append(state["amount"])
            return {"wired": True}
        return {"wired": False}

    builder = StateGraph(Wire)
    builder.add_node("approve_wire", approve_wire)
    builder.add_edge(START, "approve_wire")
    builder.add_edge("approve_wire", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_reject_on_a_yes_no_interrupt_is_refused_and_false_keeps_the_money(
    deploy: Deploy,
) -> None:
    ran: list[Any] = []
    host = deploy(serve, yes_no_graph(ran))
    host.start("wire-1", {"amount": 41000})
    assert host.handled("wire-1") == "started"
    question_id = host.question("wire-1").envelope.question_id

    message = refused(
        host.answer(question_id, "reject"),
        "states no actions",
        '{"action": "reject"}',
        f"agent-wait answer {question_id} --json true",
    )
    assert "yes/no" in message
    assert host.stored(question_id).is_open

    accepted(host.answer(question_id, "--json", "false"), question_id)
    assert host.handled("wire-1") == "resumed"
    assert ran == []


# --- 4. a middleware batch takes one --decision per action, checked per action ---------------------

INTERRUPT_ON: dict[str, Any] = {
    "send_email": True,
    "delete_file": {"allowed_decisions": ["approve", "reject"], "description": "Delete it?"},
}


def office_agent(ran: list[Any], mode: str) -> Any:
    """``create_agent`` with ``HumanInTheLoopMiddleware`` over an offline scripted chat model."""

    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        ran.append(("send_email", to))
        return f"sent to {to}"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(("delete_file", path))
        return f"deleted {path}"

    turn = calls(("send_email", {"to": "cfo@example.com"}), ("delete_file", {"path": "/q3.xlsx"}))
    middleware = HumanInTheLoopMiddleware(interrupt_on=INTERRUPT_ON, interrupt_mode=mode)  # type: ignore[arg-type]
    chat = model(turn, AIMessage("done"))
    return create_agent(
        chat, [send_email, delete_file], middleware=[middleware], checkpointer=InMemorySaver()
    )


START_OFFICE = {"messages": [{"role": "user", "content": "tidy up"}]}


def test_a_batch_refuses_a_bare_action_and_a_decision_its_action_does_not_allow(
    deploy: Deploy,
) -> None:
    ran: list[Any] = []
    host = deploy(serve, office_agent(ran, "batched"))
    host.start("office-1", START_OFFICE)
    assert host.handled("office-1") == "started"
    question_id = host.question("office-1").envelope.question_id

    refused(
        host.answer(question_id, "approve"),
        "is a batch of 2 action(s)",
        f"agent-wait answer {question_id} --decision approve --decision approve",
    )
    refused(
        host.answer(question_id, "--decision", "approve", "--decision", 'edit:{"path": "/tmp"}'),
        "--decision 2 (delete_file): 'edit' is not one of its allowed decisions",
        "['approve', 'reject']",
    )
    refused(
        host.answer(question_id, "--json", '{"decisions": [{"type": "approve"}]}'),
        "answer.decisions",
        f"agent-wait answer {question_id} --decision approve --decision approve",
    )
    assert host.stored(question_id).is_open

    done = host.answer(
        question_id,
        "--decision",
        'edit:{"to": "ceo@example.com"}',
        "--decision",
        "reject:keep the spreadsheet",
    )
    accepted(done, question_id)
    assert host.handled("office-1") == "resumed"
    assert ran == [("send_email", "ceo@example.com")]


def test_per_call_questions_show_their_own_form_when_refused(deploy: Deploy) -> None:
    ran: list[Any] = []
    host = deploy(serve, office_agent(ran, "per_call"))
    host.start("office-2", START_OFFICE)
    assert host.handled("office-2") == "started"
    by_tool = {q.envelope.question["name"]: q.envelope for q in host.questions("office-2")}
    assert sorted(by_tool) == ["delete_file", "send_email"]
    delete, send = by_tool["delete_file"].question_id, by_tool["send_email"].question_id

    # The middleware's own response schema decides: its form, not an action object.
    form = f"""send it with: agent-wait answer {delete} --json '{{"type": "approve"}}'"""
    refused(host.answer(delete, "reject"), "answer: {'action': 'reject'} is not valid", form)
    refused(host.answer(delete, "--json", '{"type": "edit"}'), "answer: {'type': 'edit'}", form)
    accepted(host.answer(delete, "--json", '{"type": "reject", "message": "keep it"}'), delete)
    assert host.handled("office-2") == "resumed"
    accepted(host.answer(send, "--json", '{"type": "approve"}'), send)
    assert host.handled("office-2") == "resumed"
    assert ran == [("send_email", "cfo@example.com")]


# --- 6. static breakpoints and the functional API ---------------------------------------------------


class Mail(TypedDict, total=False):
    to: str
    draft: str


def mail_graph(sent: list[str]) -> Any:
    """LangGraph's documented review: draft, a breakpoint before the step with side effects."""
    builder = StateGraph(Mail)
    builder.add_node("draft", lambda s: {"draft": f"Hello {s['to']}"})
    builder.add_node("send", lambda s: sent.append(s["draft"]) or {})
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=InMemorySaver(), interrupt_before=["send"])


def test_a_breakpoint_asks_to_continue_and_reject_leaves_it_stopped(deploy: Deploy) -> None:
    sent: list[str] = []
    graph = mail_graph(sent)
    host = deploy(serve, graph)
    host.start("mail-1", {"to": "ops@example.com"})
    host.start("mail-2", {"to": "cfo@example.com"})
    assert host.handled("mail-1") == host.handled("mail-2") == "started"
    stopped = host.question("mail-1").envelope
    assert stopped.question["text"] == (
        "Continue past the breakpoint before node 'send' (it has not run yet)?"
    )
    assert stopped.question["state"] == {"to": "ops@example.com", "draft": "Hello ops@example.com"}
    refused(host.answer(stopped.question_id, "edit"), "answer.action: 'edit' is not one of")

    rejected = host.answer(stopped.question_id, "reject", "--answer", '{"reason": "wrong list"}')
    accepted(rejected, stopped.question_id)
    assert host.handled("mail-1") == "resumed"
    state = graph.get_state({"configurable": {"thread_id": "mail-1"}})
    assert state.next == ("send",)
    assert state.metadata["agent_wait_breakpoint_reason"] == "wrong list"

    go_on = host.question("mail-2").envelope.question_id
    accepted(host.answer(go_on, "approve"), go_on)
    assert host.handled("mail-2") == "resumed"
    assert sent == ["Hello cfo@example.com"]


def test_a_functional_api_question_names_its_task(deploy: Deploy) -> None:
    refunded: list[str] = []

    @task
    def refund(order_id: str) -> str:
        if interrupt({"refund": order_id}) is True:
            refunded.append(order_id)
            return "refunded"
        return "kept"

    @entrypoint(checkpointer=InMemorySaver())
    def workflow(order_id: str) -> str:
        return refund(order_id).result()

    host = deploy(serve, workflow)
    host.start("flow-1", "order-4471")
    assert host.handled("flow-1") == "started"
    listed = json.loads(host.cli("inbox", "--json").stdout)
    [item] = [i for i in listed if i["envelope"]["thread_id"] == "flow-1"]
    assert item["envelope"]["context"]["node"] == "refund"
    question_id = item["envelope"]["question_id"]
    refused(host.answer(question_id, "approve"), f"agent-wait answer {question_id} --json true")
    accepted(host.answer(question_id, "--json", "true"), question_id)
    assert host.handled("flow-1") == "resumed"
    assert refunded == ["order-4471"]
