"""Interrupts from code that never heard of agent-wait: published with only what is known."""

from __future__ import annotations

from typing import Any, TypedDict

import jsonschema
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel

from agent_wait.core import AnswerTrust, MemoryAnnounce, Outcome
from agent_wait.langgraph import handle_message
from tests.langgraph.conftest import answer, check_envelope, namespace


class State(TypedDict, total=False):
    topic: str
    result: Any


def one_node_graph(node: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("ask", node)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=InMemorySaver())


def start(thread_id: str) -> dict[str, Any]:
    return {"thread_id": thread_id, "input": {"topic": "refunds"}}


def config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def test_a_plain_string_interrupt_states_no_actions_and_takes_its_own_answer(
    inbox: MemoryAnnounce,
) -> None:
    def ask(state: State) -> State:
        return {"result": interrupt("Proceed with the refund? (y/n)")}

    graph = one_node_graph(ask)
    started = handle_message(graph, start("plain-1"), inbox)
    [envelope] = started.report.envelopes
    check_envelope(
        envelope,
        thread_id="plain-1",
        question_id=started.question_ids[0],
        question="Proceed with the refund? (y/n)",
        allowed_actions=[],
        source=None,
        context={"framework": "langgraph", "node": "ask", "namespace": namespace("ask")},
    )
    done = handle_message(graph, answer(envelope, "y"), inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.result["result"] == "y"


def test_a_dict_interrupt_with_strict_actions_on_takes_any_answer(inbox: MemoryAnnounce) -> None:
    # Nothing is stated, so a host that holds answers to allowed_actions has nothing to refuse.
    def ask(state: State) -> State:
        return {"result": interrupt({"question": "approved?", "topic": state["topic"]})}

    graph = one_node_graph(ask)
    [envelope] = handle_message(graph, start("plain-2"), inbox).report.envelopes
    assert envelope.allowed_actions == []
    strict = AnswerTrust(strict_actions=True)
    done = handle_message(graph, answer(envelope, {"approved": True}), inbox, trust=strict)
    assert done.outcome is Outcome.RESUMED
    assert done.result["result"] == {"approved": True}


class Refund(BaseModel):
    approved: bool
    amount: int


def test_a_response_schema_is_published_and_a_bad_answer_is_never_saved(
    inbox: MemoryAnnounce,
) -> None:
    seen: list[Any] = []

    def ask(state: State) -> State:
        decision = interrupt({"refund": "order-1"}, response_schema=Refund)
        seen.append(decision)
        return {"result": decision.model_dump()}

    graph = one_node_graph(ask)
    started = handle_message(graph, start("schema-1"), inbox)
    [envelope] = started.report.envelopes
    check_envelope(
        envelope,
        thread_id="schema-1",
        question_id=started.question_ids[0],
        question={"refund": "order-1"},
        allowed_actions=[],
        source=None,
        answer_schema=Refund.model_json_schema(),
        context={"framework": "langgraph", "node": "ask", "namespace": namespace("ask")},
    )
    bad = handle_message(graph, answer(envelope, {"approved": "maybe", "amount": 40}), inbox)
    assert bad.outcome is Outcome.INVALID_ANSWER
    assert bad.detail is not None
    assert "answer.approved" in bad.detail
    assert "'maybe'" in bad.detail
    assert seen == []
    # Nothing of the bad answer was kept: the question is still pending, under its same id.
    [pending] = graph.get_state(config("schema-1")).interrupts
    assert pending.id == envelope.question_id
    good = handle_message(graph, answer(envelope, {"approved": True, "amount": 40}), inbox)
    assert good.outcome is Outcome.RESUMED
    assert seen == [Refund(approved=True, amount=40)]
    assert good.result["result"] == {"approved": True, "amount": 40}


def test_a_dict_response_schema_is_checked_although_langgraph_does_not(
    inbox: MemoryAnnounce,
) -> None:
    schema = {
        "type": "object",
        "properties": {"choice": {"enum": ["visa", "amex"]}},
        "required": ["choice"],
    }
    seen: list[Any] = []

    def ask(state: State) -> State:
        value = interrupt("Which card?", response_schema=schema)
        seen.append(value)
        return {"result": value["choice"]}

    graph = one_node_graph(ask)
    [envelope] = handle_message(graph, start("schema-2"), inbox).report.envelopes
    assert envelope.answer_schema == schema
    refused = handle_message(graph, answer(envelope, {"card": "visa"}), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert refused.detail is not None
    assert "'choice' is a required property" in refused.detail
    refused = handle_message(graph, answer(envelope, {"choice": "diners"}), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert refused.detail is not None
    assert "answer.choice" in refused.detail
    assert seen == []
    done = handle_message(graph, answer(envelope, {"choice": "amex"}), inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.result["result"] == "amex"


def inbox_node(config: dict[str, bool], runs: list[Any]) -> Any:
    """A node written in Agent Inbox's documented style: ask, then act on the response type.

    The request is a ``HumanInterrupt`` (``action_request``, ``config``, ``description``); its
    TypedDicts in ``langgraph.prebuilt.interrupt`` are deprecated, the shape is not.
    """

    def review(state: State) -> State:
        request = {
            "action_request": {"action": "send_email", "args": {"to": "a@example.com"}},
            "config": config,
            "description": "Send this email?",
        }
        response = interrupt([request])[0]
        if response["type"] == "accept":
            runs.append(("send_email", {"to": "a@example.com"}))
        elif response["type"] == "edit":
            runs.append(("send_email", response["args"]["args"]))
        elif response["type"] == "response":
            runs.append(("reply", response["args"]))
        return {"result": response["type"]}

    return review


def test_an_agent_inbox_request_publishes_its_config_as_actions_and_schema(
    inbox: MemoryAnnounce,
) -> None:
    runs: list[Any] = []
    allowed = {
        "allow_accept": True,
        "allow_edit": False,
        "allow_respond": True,
        "allow_ignore": False,
    }
    graph = one_node_graph(inbox_node(allowed, runs))
    started = handle_message(graph, start("inbox-1"), inbox)
    [envelope] = started.report.envelopes
    assert envelope.question == [
        {
            "action_request": {"action": "send_email", "args": {"to": "a@example.com"}},
            "config": allowed,
            "description": "Send this email?",
        }
    ]
    assert envelope.allowed_actions == ["accept", "response"]
    assert envelope.answer_schema is not None
    check = jsonschema.Draft202012Validator(envelope.answer_schema)
    assert check.is_valid([{"type": "accept", "args": None}])
    assert check.is_valid([{"type": "response", "args": "send it tomorrow"}])
    assert not check.is_valid([{"type": "edit", "args": {"action": "send_email", "args": {}}}])
    assert not check.is_valid({"action": "approve"})

    # The envelope's old promise, {"action": "approve"}, would crash the node and be saved.
    refused = handle_message(graph, answer(envelope, {"action": "approve"}), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    refused = handle_message(graph, answer(envelope, [{"type": "ignore", "args": None}]), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert runs == []
    done = handle_message(graph, answer(envelope, [{"type": "accept", "args": None}]), inbox)
    assert done.outcome is Outcome.RESUMED
    assert runs == [("send_email", {"to": "a@example.com"})]
    assert done.result["result"] == "accept"


def test_an_agent_inbox_edit_reaches_the_node_and_strict_actions_read_the_type(
    inbox: MemoryAnnounce,
) -> None:
    runs: list[Any] = []
    everything = dict.fromkeys(
        ("allow_accept", "allow_edit", "allow_respond", "allow_ignore"), True
    )
    graph = one_node_graph(inbox_node(everything, runs))
    [envelope] = handle_message(graph, start("inbox-2"), inbox).report.envelopes
    assert envelope.allowed_actions == ["accept", "edit", "response", "ignore"]
    edit = [{"type": "edit", "args": {"action": "send_email", "args": {"to": "b@example.com"}}}]
    strict = AnswerTrust(strict_actions=True)
    done = handle_message(graph, answer(envelope, edit), inbox, trust=strict)
    assert done.outcome is Outcome.RESUMED
    assert runs == [("send_email", {"to": "b@example.com"})]
