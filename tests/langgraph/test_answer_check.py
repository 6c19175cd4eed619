"""Answers refused where a person gives them, on real LangGraph questions, before anything is recorded.

Each question is asked by a real graph through the real host into the embedded inbox, answered
with ``agent-wait answer`` (the CLI's main, and once in its own process) and ``answer()``: every
bad answer is refused with a message naming the field and a valid answer, nothing is recorded or
sent, and then a correct answer resumes the run.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt

from agent_wait.core import Outcome, SqliteAnnounce, SqliteEntry, SqliteQuestionStore
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.host import ActionNotAllowed, AnswerNotAccepted, answer
from agent_wait.host._cli import main
from agent_wait.langgraph import handle_message, wait
from tests.langgraph.conftest import calls, model


class State(TypedDict, total=False):
    done: str


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def received() -> list[dict[str, Any]]:
    """The answer messages the embedded entry point holds, acknowledged."""
    messages: list[dict[str, Any]] = []
    with SqliteEntry(default_inbox_path()) as entry:
        while batch := entry.receive(10):
            for message in batch:
                messages.append(message.message)
                assert entry.ack(message)
    return messages


def still_open(question_id: str) -> bool:
    with SqliteQuestionStore(default_inbox_path()) as store:
        [stored] = store.find(question_id)
    return stored.is_open and stored.answer is None


def start(app: Any, thread_id: str, value: Any = None) -> str:
    started = handle_message(
        app, {"thread_id": thread_id, "input": value or {"done": ""}}, SqliteAnnounce()
    )
    assert started.outcome is Outcome.STARTED
    [question_id] = started.question_ids
    return question_id


def resume(app: Any) -> Any:
    [message] = received()
    resumed = handle_message(app, message, SqliteAnnounce())
    assert resumed.outcome is Outcome.RESUMED
    return message


def transfer_graph(runs: list[str]) -> Any:
    """LangGraph's documented yes/no pattern: ``if interrupt(...):`` guards the step."""

    def transfer(state: State) -> State:
        if interrupt("Transfer 500 to ACME?"):
            runs.append("transfer")
            return {"done": "transferred"}
        return {"done": "kept"}

    builder = StateGraph(State)
    builder.add_node("transfer", transfer)
    builder.add_edge(START, "transfer")
    return builder.compile(checkpointer=InMemorySaver())


def test_reject_on_a_yes_no_interrupt_is_refused_and_shows_the_json_form() -> None:
    runs: list[str] = []
    app = transfer_graph(runs)
    question_id = start(app, "yes-no")
    # In its own process, as an operator types it: {"action": "reject"} would be truthy.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "agent_wait.host._cli", "answer", question_id, "reject"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert f"question {question_id} (thread yes-no) states no actions" in done.stderr
    assert f"agent-wait answer {question_id} --json true" in done.stderr
    assert received() == []
    assert still_open(question_id)

    code, _, err = cli("answer", question_id, "--json", "false")
    assert (code, err) == (0, "")
    resume(app)
    state = app.get_state({"configurable": {"thread_id": "yes-no"}})
    assert state.values["done"] == "kept"
    assert runs == []


def refund_graph(runs: list[tuple[str, int]]) -> Any:
    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append((order_id, amount))
        return f"refunded {amount}"

    def pay(state: State) -> State:
        return {"done": issue_refund("order-4471", 41000)}

    builder = StateGraph(State)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize(
    ("typed", "refusal"),
    [
        ('{"action": "approve", "args": {"amout": 5}}', "answer.args: Additional properties"),
        ('{"action": "approve", "args": {"amount": "lots"}}', "answer.args.amount: 'lots' is not"),
        ('{"action": "approve", "args": {"amount": 1e400}}', "answer.args.amount: inf is not a"),
        ('{"action": "approve", "args": {"amount": NaN}}', "answer.args.amount: nan is not a"),
        (
            '{"action": "approve", "args": {"amount": 99999999999999999999}}',
            "answer.args.amount: the integer 99999999999999999999 is outside the signed 64-bit",
        ),
        ('{"action": "approve", "reason": "\\ud800"}', "answer.reason: '\\ud800' is not valid"),
        ('{"action": "maybe"}', "answer.action: 'maybe' is not one of the question's allowed"),
        ('"y"', "answer: 'y' is not of type 'object'"),
    ],
)
def test_a_wait_answer_the_function_cannot_take_is_refused_then_a_correct_one_runs(
    typed: str, refusal: str
) -> None:
    runs: list[tuple[str, int]] = []
    app = refund_graph(runs)
    question_id = start(app, "refund")
    code, out, err = cli("answer", question_id, "--json", typed)
    assert (code, out) == (1, "")
    assert refusal in err
    assert 'A valid answer: {"action": "approve"}' in err
    assert f"send it with: agent-wait answer {question_id} approve" in err
    assert received() == []
    assert still_open(question_id)

    code, _, err = cli("answer", question_id, "approve", "--answer", '{"args": {"amount": 40}}')
    assert (code, err) == (0, "")
    resume(app)
    assert runs == [("order-4471", 40)]


def test_answer_refuses_what_no_framework_keeps_and_the_shorthand_outside_the_actions() -> None:
    runs: list[tuple[str, int]] = []
    app = refund_graph(runs)
    question_id = start(app, "refund-api")
    with pytest.raises(ActionNotAllowed, match=r"answer.action: 'escalate' is not one of"):
        answer(question_id, "escalate")
    with pytest.raises(AnswerNotAccepted, match=r"answer: \d+ bytes of JSON, more than the 65536"):
        answer(question_id, "reject", answer={"reason": "x" * 70_000})
    with pytest.raises(AnswerNotAccepted, match=r"answer.args.amount: 2.5 is not of type"):
        answer(question_id, "approve", answer={"args": {"amount": 2.5}})
    assert received() == []
    assert still_open(question_id)

    answer(question_id, "reject", answer={"reason": "duplicate"})
    resume(app)
    assert runs == []
    state = app.get_state({"configurable": {"thread_id": "refund-api"}})
    assert state.values["done"] == {"action": "reject", "reason": "duplicate"}


class Office:
    def __init__(self) -> None:
        self.runs: list[tuple[str, str]] = []

    def agent(self, mode: str = "batched") -> Any:
        office = self

        @tool
        def send_email(to: str) -> str:
            """Send an email."""
            office.runs.append(("send_email", to))
            return f"sent to {to}"

        @tool
        def delete_file(path: str) -> str:
            """Delete a file."""
            office.runs.append(("delete_file", path))
            return f"deleted {path}"

        turn = calls(("send_email", {"to": "cfo@example.com"}), ("delete_file", {"path": "/q3"}))
        middleware = HumanInTheLoopMiddleware(
            interrupt_on={
                "send_email": True,
                "delete_file": {"allowed_decisions": ["approve", "reject"]},
            },
            interrupt_mode=mode,  # pyright: ignore[reportArgumentType]
        )
        return create_agent(
            model(turn, AIMessage("done")),
            [send_email, delete_file],
            middleware=[middleware],
            checkpointer=InMemorySaver(),
        )


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        (["approve"], "is a batch of 2 action(s): ACTION 'approve' does not say"),
        (["--decision", "approve"], "has 2 action(s) (send_email, delete_file), one --decision"),
        (
            ["--decision", "approve", "--decision", "edit:{}"],
            "--decision 2 (delete_file): 'edit' is not one of its allowed decisions",
        ),
        (["--decision", "respond", "--decision", "approve"], "respond takes the reply text"),
        (
            ["--decision", 'edit:{"to": 5}', "--decision", "approve"],
            "answer.decisions[0].edited_action.args.to: 5 is not of type 'string'",
        ),
        (
            ["--decision", 'edit:{"cc": "x"}', "--decision", "approve"],
            "answer.decisions[0].edited_action.args: Additional properties are not allowed",
        ),
        (["--json", '{"action": "approve"}'], "'decisions' is a required property"),
    ],
)
def test_a_middleware_batch_takes_one_allowed_decision_per_action(
    argv: list[str], refusal: str
) -> None:
    office = Office()
    app = office.agent()
    question_id = start(app, "office", {"messages": [("user", "tidy up")]})
    code, out, err = cli("answer", question_id, *argv)
    assert (code, out) == (1, "")
    assert refusal in err
    assert f"agent-wait answer {question_id} --decision approve --decision approve" in err
    assert received() == []
    assert still_open(question_id)

    code, _, err = cli(
        "answer",
        question_id,
        "--decision",
        'edit:{"to": "ceo@example.com"}',
        "--decision",
        "reject:keep the spreadsheet",
    )
    assert (code, err) == (0, "")
    message = resume(app)
    assert message["answer"] == {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {"name": "send_email", "args": {"to": "ceo@example.com"}},
            },
            {"type": "reject", "message": "keep the spreadsheet"},
        ]
    }
    assert office.runs == [("send_email", "ceo@example.com")]
