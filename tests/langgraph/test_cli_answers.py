"""A real graph parked on foreign and parallel questions, resumed by what `agent-wait answer` sends."""

from __future__ import annotations

import io
import operator
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from typing import Annotated, Any, TypedDict
from unittest.mock import patch

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt

from agent_wait.core import Outcome, SqliteAnnounce, SqliteEntry, SqliteQuestionStore
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.host._approvers import ALLOW_BY_ENV
from agent_wait.host._cli import main
from agent_wait.langgraph import handle_message, wait

CARD = {
    "type": "object",
    "properties": {"choice": {"enum": ["visa", "amex"]}},
    "required": ["choice"],
}


class State(TypedDict, total=False):
    done: Annotated[list[str], operator.add]


def graph(runs: list[str]) -> Any:
    """Three parallel nodes: a @wait refund, a foreign y/n prompt, a foreign prompt with a schema."""
    builder = StateGraph(State)

    @wait
    def refund(order_id: str) -> str:
        return f"refunded {order_id}"

    def pay(state: State) -> State:
        runs.append("pay")
        return {"done": [refund("order-9")]}

    def confirm(state: State) -> State:
        runs.append("confirm")
        return {"done": [f"confirm: {interrupt('Send the email? (y/n)')}"]}

    def card(state: State) -> State:
        runs.append("card")
        return {"done": [f"card: {interrupt('Which card?', response_schema=CARD)['choice']}"]}

    for name, node in (("pay", pay), ("confirm", confirm), ("card", card)):
        builder.add_node(name, node)
        builder.add_edge(START, name)
    return builder.compile(checkpointer=InMemorySaver())


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    # --by names who answers in these tests: the configuration allows it.
    with redirect_stdout(out), redirect_stderr(err), patch.dict(os.environ, {ALLOW_BY_ENV: "1"}):
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


def park(app: Any, thread_id: str) -> dict[str, str]:
    """Start the thread; question id by node, as published into the embedded inbox."""
    started = handle_message(app, {"thread_id": thread_id, "input": {"done": []}}, SqliteAnnounce())
    assert started.outcome is Outcome.STARTED
    ids: dict[str, str] = {}
    for envelope in started.report.envelopes:
        if envelope.source is not None:
            ids["pay"] = envelope.question_id
        elif envelope.answer_schema is not None:
            ids["card"] = envelope.question_id
        else:
            ids["confirm"] = envelope.question_id
    assert sorted(ids) == ["card", "confirm", "pay"]
    return ids


def test_a_foreign_question_is_resumed_by_a_raw_answer_from_the_cli() -> None:
    runs: list[str] = []
    app = graph(runs)
    ids = park(app, "cli-foreign")
    # The command in its own process, as an operator runs it.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "agent_wait.host._cli", "answer", ids["confirm"], "--json", '"y"'],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    [message] = received()
    assert message["answer"] == "y"
    resumed = handle_message(app, message, SqliteAnnounce())
    assert resumed.outcome is Outcome.RESUMED
    state = app.get_state({"configurable": {"thread_id": "cli-foreign"}})
    assert state.values["done"] == ["confirm: y"]
    assert {i.id for i in state.interrupts} == {ids["pay"], ids["card"]}


def test_the_cli_refuses_an_answer_the_schema_refuses_and_the_graph_never_sees_it() -> None:
    app = graph([])
    ids = park(app, "cli-schema")
    code, out, err = cli("answer", ids["card"], "--json", '{"choice": "diners"}')
    assert (code, out) == (1, "")
    assert (
        f"question {ids['card']} (thread cli-schema): answer.choice: 'diners' is not one of" in err
    )
    assert received() == []
    with SqliteQuestionStore(default_inbox_path()) as store:
        assert store.find(ids["card"])[0].is_open


def test_one_cli_message_answers_every_question_and_the_graph_resumes_once() -> None:
    runs: list[str] = []
    app = graph(runs)
    ids = park(app, "cli-batch")
    assert sorted(runs) == ["card", "confirm", "pay"]
    code, out, err = cli(
        "answer",
        ids["pay"],
        "approve",
        "--also",
        ids["confirm"],
        '"n"',
        "--also",
        ids["card"],
        '{"choice": "amex"}',
        "--by",
        "alice",
    )
    assert (code, err) == (0, "")
    assert len(out.splitlines()) == 3
    [message] = received()
    assert [m["question_id"] for m in message["more_answers"]] == [ids["confirm"], ids["card"]]
    resumed = handle_message(app, message, SqliteAnnounce())
    assert resumed.outcome is Outcome.RESUMED
    state = app.get_state({"configurable": {"thread_id": "cli-batch"}})
    assert sorted(state.values["done"]) == ["card: amex", "confirm: n", "refunded order-9"]
    assert state.interrupts == ()
    # One resume: each node ran once to ask and once to finish, never again per answer.
    assert sorted(runs) == ["card", "card", "confirm", "confirm", "pay", "pay"]
    with SqliteQuestionStore(default_inbox_path()) as store:
        for question_id in ids.values():
            [stored] = store.find(question_id)
            assert (stored.status, stored.answered_by) == ("answered", "alice")
