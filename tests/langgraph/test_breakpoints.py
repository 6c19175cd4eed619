"""Static breakpoints (``interrupt_before`` / ``interrupt_after``) asked as questions by the host."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from agent_wait.core import MemoryAnnounce, Outcome, SqliteAnnounce
from agent_wait.langgraph import ahandle_message, handle_message, stream_message
from tests.langgraph.conftest import INTERRUPT_ID, answer
from tests.langgraph.test_cli_answers import cli, received

CONFIG = {"configurable": {"thread_id": "t"}}
START_MESSAGE = {"thread_id": "t", "input": {"to": "ops@example.com"}}


class Mail(TypedDict, total=False):
    to: str
    draft: str
    sent: bool


def mail_graph(sent: list[str], **breakpoints: Any) -> Any:
    """LangGraph's review pattern: draft, then a breakpoint, then the step with side effects."""

    def draft(state: Mail) -> Mail:
        return {"draft": f"Hello {state['to']}"}

    def send(state: Mail) -> Mail:
        sent.append(state["draft"])
        return {"sent": True}

    builder = StateGraph(Mail)
    builder.add_node("draft", draft)
    builder.add_node("send", send)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=InMemorySaver(), **breakpoints)


@pytest.mark.parametrize(
    ("compiled", "given", "where", "node"),
    [
        ({"interrupt_before": ["send"]}, {}, "before", "send"),
        ({"interrupt_after": ["draft"]}, {}, "after", "draft"),
        ({"interrupt_before": "*"}, {}, "before", "draft"),
        ({}, {"interrupt_before": ["send"]}, "before", "send"),
        ({}, {"interrupt_after": ["draft"]}, "after", "draft"),
    ],
)
def test_a_breakpoint_asks_to_continue_and_approve_runs_on_once(
    inbox: MemoryAnnounce,
    compiled: dict[str, Any],
    given: dict[str, Any],
    where: str,
    node: str,
) -> None:
    sent: list[str] = []
    graph = mail_graph(sent, **compiled)
    started = handle_message(graph, START_MESSAGE, inbox, **given)
    assert started.outcome is Outcome.STARTED
    [envelope] = started.report.envelopes
    assert INTERRUPT_ID.match(envelope.question_id)
    question = envelope.question
    assert question["breakpoint"] == f"interrupt_{where}"
    assert question["node"] == node
    assert f"breakpoint {where} node {node!r}" in question["text"]
    assert envelope.context is not None
    assert envelope.context.node == node
    assert envelope.allowed_actions == ["approve", "reject"]
    assert sent == []

    # A redelivered start message asks the same question again, under the same id.
    again = handle_message(graph, START_MESSAGE, inbox, **given)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.question_ids == [envelope.question_id]

    approve = answer(envelope, {"action": "approve"})
    if node == "draft" and where == "before":
        # "*" stops before every node: past draft, then before send.
        done = handle_message(graph, approve, inbox, **given)
        assert done.outcome is Outcome.RESUMED
        [envelope] = done.report.envelopes
        assert envelope.question["node"] == "send"
        approve = answer(envelope, {"action": "approve"})
    done = handle_message(graph, approve, inbox, **given)
    assert done.outcome is Outcome.RESUMED
    assert done.report.envelopes == ()
    assert sent == ["Hello ops@example.com"]
    assert graph.get_state(CONFIG).next == ()

    redelivered = handle_message(graph, approve, inbox, **given)
    assert redelivered.outcome is Outcome.DUPLICATE
    assert sent == ["Hello ops@example.com"]


def test_the_question_shows_the_pending_state(inbox: MemoryAnnounce) -> None:
    graph = mail_graph([], interrupt_before=["send"])
    [envelope] = handle_message(graph, START_MESSAGE, inbox).report.envelopes
    assert envelope.question["state"] == {"to": "ops@example.com", "draft": "Hello ops@example.com"}
    assert envelope.question["next"] == ["send"]
    assert envelope.question["text"] == (
        "Continue past the breakpoint before node 'send' (it has not run yet)?"
    )


def test_reject_leaves_the_thread_stopped_and_records_why(inbox: MemoryAnnounce) -> None:
    sent: list[str] = []
    graph = mail_graph(sent, interrupt_before=["send"])
    [envelope] = handle_message(graph, START_MESSAGE, inbox).report.envelopes
    reject = answer(envelope, {"action": "reject", "reason": "wrong recipient"})
    done = handle_message(graph, reject, inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.report.envelopes == ()
    assert sent == []
    state = graph.get_state(CONFIG)
    assert state.next == ("send",)
    assert state.metadata is not None
    assert state.metadata["agent_wait_breakpoint_rejected"] == envelope.question_id
    assert state.metadata["agent_wait_breakpoint_reason"] == "wrong recipient"
    # The question is closed: neither the rejection again nor a late approval runs anything.
    assert handle_message(graph, reject, inbox).outcome is Outcome.DUPLICATE
    late = answer(envelope, {"action": "approve"})
    assert handle_message(graph, late, inbox).outcome is Outcome.DUPLICATE
    assert sent == []


@pytest.mark.parametrize(
    "value",
    [True, {"action": "maybe"}, {"action": "reject", "reason": 3}, {"action": "approve", "x": 1}],
)
def test_an_answer_other_than_approve_or_reject_is_refused(
    inbox: MemoryAnnounce, value: Any
) -> None:
    sent: list[str] = []
    graph = mail_graph(sent, interrupt_before=["send"])
    [envelope] = handle_message(graph, START_MESSAGE, inbox).report.envelopes
    refused = handle_message(graph, answer(envelope, value), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert refused.detail is not None
    assert "answer" in refused.detail
    assert sent == []
    approved = handle_message(graph, answer(envelope, {"action": "approve"}), inbox)
    assert approved.outcome is Outcome.RESUMED
    assert sent == ["Hello ops@example.com"]


async def test_the_async_host_asks_and_continues(inbox: MemoryAnnounce) -> None:
    sent: list[str] = []
    graph = mail_graph(sent, interrupt_after=["draft"])
    [envelope] = (await ahandle_message(graph, START_MESSAGE, inbox)).report.envelopes
    assert envelope.question["breakpoint"] == "interrupt_after"
    assert envelope.question["next"] == ["send"]
    rejected = answer(envelope, {"action": "reject"})
    assert (await ahandle_message(graph, rejected, inbox)).outcome is Outcome.RESUMED
    assert (await graph.aget_state(CONFIG)).metadata["agent_wait_breakpoint_reason"] == ""
    assert sent == []


async def test_the_async_host_approves(inbox: MemoryAnnounce) -> None:
    sent: list[str] = []
    graph = mail_graph(sent, interrupt_before=["send"])
    [envelope] = (await ahandle_message(graph, START_MESSAGE, inbox)).report.envelopes
    done = await ahandle_message(graph, answer(envelope, {"action": "approve"}), inbox)
    assert done.outcome is Outcome.RESUMED
    assert sent == ["Hello ops@example.com"]


def test_a_streaming_host_asks_and_streams_the_rest(inbox: MemoryAnnounce) -> None:
    sent: list[str] = []
    graph = mail_graph(sent)
    run = stream_message(
        graph, START_MESSAGE, inbox, stream_mode="updates", interrupt_before=["send"]
    )
    # LangGraph marks the stop with an empty interrupt update.
    assert list(run) == [{"draft": {"draft": "Hello ops@example.com"}}, {"__interrupt__": ()}]
    [envelope] = run.handled.report.envelopes
    run = stream_message(
        graph,
        answer(envelope, {"action": "approve"}),
        inbox,
        stream_mode="updates",
        interrupt_before=["send"],
    )
    assert list(run) == [{"send": {"sent": True}}]
    assert run.handled.outcome is Outcome.RESUMED
    assert sent == ["Hello ops@example.com"]


def test_a_breakpoint_given_as_one_node_name_is_refused(inbox: MemoryAnnounce) -> None:
    with pytest.raises(TypeError, match=r"interrupt_before: expected a list of node names"):
        handle_message(mail_graph([]), START_MESSAGE, inbox, interrupt_before="send")


def test_a_breakpoint_is_reviewed_with_the_cli() -> None:
    sent: list[str] = []
    graph = mail_graph(sent, interrupt_before=["send"])
    [envelope] = handle_message(graph, START_MESSAGE, SqliteAnnounce()).report.envelopes
    code, _, err = cli("answer", envelope.question_id, "reject", "--answer", '{"reason": "typo"}')
    assert (code, err) == (0, "")
    [message] = received()
    assert handle_message(graph, message, SqliteAnnounce()).outcome is Outcome.RESUMED
    assert graph.get_state(CONFIG).metadata["agent_wait_breakpoint_reason"] == "typo"
    assert sent == []
