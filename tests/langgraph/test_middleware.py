"""LangChain create_agent + HumanInTheLoopMiddleware: batched and per-call questions."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.langgraph import handle_message
from agent_wait.langgraph._adapter import batch_schema
from tests.langgraph.conftest import ScriptedChat, answer, calls, check_envelope, model, namespace

INTERRUPT_ON: dict[str, Any] = {
    "send_email": True,
    "delete_file": {"allowed_decisions": ["approve", "reject"], "description": "Delete it?"},
}
ALL_DECISIONS = ["approve", "edit", "reject", "respond"]


class Office:
    def __init__(self) -> None:
        self.runs: list[tuple[str, str]] = []

    def tools(self) -> list[Any]:
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

        return [send_email, delete_file]


def agent(office: Office, chat: ScriptedChat, mode: str = "batched") -> Any:
    middleware = HumanInTheLoopMiddleware(interrupt_on=INTERRUPT_ON, interrupt_mode=mode)  # type: ignore[arg-type]
    return create_agent(chat, office.tools(), middleware=[middleware], checkpointer=InMemorySaver())


TURN = calls(("send_email", {"to": "cfo@example.com"}), ("delete_file", {"path": "/tmp/q3.xlsx"}))
START = {"thread_id": "office-1", "input": {"messages": [("user", "tidy up")]}}


def tool_messages(messages: list[Any]) -> dict[str, ToolMessage]:
    return {m.name: m for m in messages if isinstance(m, ToolMessage)}


def test_batch_is_one_question_with_its_actions(inbox: MemoryAnnounce) -> None:
    office = Office()
    chat = model(TURN, AIMessage("done"))
    graph = agent(office, chat)
    started = handle_message(graph, START, inbox)
    [envelope] = started.report.envelopes
    check_envelope(
        envelope,
        thread_id="office-1",
        question_id=started.question_ids[0],
        question={
            "actions": [
                {
                    "name": "send_email",
                    "args": {"to": "cfo@example.com"},
                    "description": envelope.question["actions"][0]["description"],
                    "allowed_decisions": ALL_DECISIONS,
                },
                {
                    "name": "delete_file",
                    "args": {"path": "/tmp/q3.xlsx"},
                    "description": "Delete it?",
                    "allowed_decisions": ["approve", "reject"],
                },
            ]
        },
        allowed_actions=ALL_DECISIONS,
        source=None,
        answer_schema=batch_schema(envelope.question["actions"]),
        context={
            "framework": "langgraph",
            "node": "HumanInTheLoopMiddleware.after_model",
            "namespace": namespace("HumanInTheLoopMiddleware.after_model"),
        },
    )
    assert "send_email" in envelope.question["actions"][0]["description"]

    decisions = {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {"name": "send_email", "args": {"to": "ceo@example.com"}},
            },
            {"type": "reject", "message": "keep the spreadsheet"},
        ]
    }
    resumed = handle_message(graph, answer(envelope, decisions), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert office.runs == [("send_email", "ceo@example.com")]
    seen = tool_messages(chat.received[-1])
    assert "keep the spreadsheet" in str(seen["delete_file"].content)
    assert seen["delete_file"].status == "error"
    assert handle_message(graph, answer(envelope, decisions)).outcome is Outcome.DUPLICATE
    assert office.runs == [("send_email", "ceo@example.com")]


BAD_ANSWERS = [
    ({"decisions": [{"type": "approve"}]}, "expected 2 decision"),
    (
        {"decisions": [{"type": "approve"}, {"type": "edit"}]},
        "'edit' is not allowed for 'delete_file'",
    ),
    ({"decisions": [{"type": "approve"}, "yes"]}, r"decisions\[1\]: expected an object"),
    ({"decisions": [{"type": "edit"}, {"type": "approve"}]}, "edited_action"),
    ({"decisions": [{"type": "respond"}, {"type": "approve"}]}, "needs the reply text"),
    ({"action": "approve"}, "answer.decisions: expected a list"),
    ("approve", "answer: expected"),
]


@pytest.mark.parametrize(("bad", "why"), BAD_ANSWERS)
def test_a_malformed_batch_answer_is_refused_before_it_poisons_the_thread(
    bad: Any, why: str, inbox: MemoryAnnounce
) -> None:
    office = Office()
    graph = agent(office, model(TURN, AIMessage("done")))
    envelope = handle_message(graph, START, inbox).report.envelopes[0]
    refused = handle_message(graph, answer(envelope, bad), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert refused.detail is not None
    assert re.search(why, refused.detail), refused.detail
    assert office.runs == []
    approve_all = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
    resumed = handle_message(graph, answer(envelope, approve_all), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert sorted(office.runs) == [
        ("delete_file", "/tmp/q3.xlsx"),
        ("send_email", "cfo@example.com"),
    ]


def test_plain_langgraph_saves_a_malformed_batch_answer() -> None:
    # Why handle_message checks batch answers first: LangChain saves the
    # bad answer, and the thread then refuses every later answer.
    graph = agent(Office(), model(TURN, AIMessage("done")))
    cfg: RunnableConfig = {"configurable": {"thread_id": "plain"}}
    [pending] = graph.invoke({"messages": [("user", "go")]}, cfg)["__interrupt__"]
    with pytest.raises(ValueError, match="Number of human decisions"):
        graph.invoke(Command(resume={pending.id: {"decisions": [{"type": "approve"}]}}), cfg)
    good = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
    with pytest.raises(ValueError, match="Number of human decisions"):
        graph.invoke(Command(resume={pending.id: good}), cfg)


def test_per_call_questions(inbox: MemoryAnnounce) -> None:
    office = Office()
    chat = model(TURN, AIMessage("done"))
    graph = agent(office, chat, mode="per_call")
    started = handle_message(graph, START, inbox)
    by_tool = {e.question["name"]: e for e in started.report.envelopes}
    assert set(by_tool) == {"send_email", "delete_file"}
    email, delete = by_tool["send_email"], by_tool["delete_file"]
    check_envelope(
        delete,
        thread_id="office-1",
        question_id=delete.question_id,
        question={
            "type": "tool_approval",
            "tool_call_id": "call_1",
            "name": "delete_file",
            "args": {"path": "/tmp/q3.xlsx"},
            "description": "Delete it?",
        },
        allowed_actions=["approve", "reject"],
        source=None,
        answer_schema=delete.answer_schema,
        context={
            "framework": "langgraph",
            "node": "tools",
            "namespace": namespace("tools"),
            "tool": "delete_file",
            "tool_call_id": "call_1",
        },
    )
    # The middleware's own response schema, as LangGraph surfaces it on the interrupt.
    pending = graph.get_state({"configurable": {"thread_id": "office-1"}}).interrupts
    schemas = {i.id: i.response_schema for i in pending}
    assert delete.answer_schema == schemas[delete.question_id]
    assert email.answer_schema == schemas[email.question_id]
    assert delete.answer_schema is not None
    assert email.allowed_actions == ALL_DECISIONS

    refused = handle_message(graph, answer(delete, {"type": "edit"}), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert office.runs == []
    approved = handle_message(graph, answer(delete, {"type": "approve"}), inbox)
    assert approved.outcome is Outcome.RESUMED
    assert approved.question_ids == [email.question_id]  # still waiting, published again
    assert office.runs == [("delete_file", "/tmp/q3.xlsx")]
    reply = {"type": "respond", "message": "I sent it by hand"}
    done = handle_message(graph, answer(email, reply), inbox)
    assert done.outcome is Outcome.RESUMED
    assert not done.parked
    assert office.runs == [("delete_file", "/tmp/q3.xlsx")]
    assert tool_messages(chat.received[-1])["send_email"].content == "I sent it by hand"
