"""One message answering several pending questions: the thread resumes once for all of them."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt

from agent_wait.core import MemoryAnnounce, Outcome, WaitEnvelope
from agent_wait.langgraph import handle_message, wait
from tests.langgraph.conftest import answer


class State(TypedDict, total=False):
    done: Annotated[list[str], operator.add]


def fan_out(prepared: list[str]) -> Any:
    """Three parallel nodes, each doing work before it asks (the work re-runs on every resume)."""
    builder = StateGraph(State)

    @wait
    def refund(order_id: str) -> str:
        return f"refunded {order_id}"

    def node(name: str) -> Any:
        def ask(state: State) -> State:
            prepared.append(name)
            if name == "notify":
                return {"done": [f"notify: {interrupt({'send': 'email?'})}"]}
            return {"done": [refund(name)]}

        return ask

    for name in ("a", "b", "notify"):
        builder.add_node(name, node(name))
        builder.add_edge(START, name)
    return builder.compile(checkpointer=InMemorySaver())


def batch(first: WaitEnvelope, value: Any, *more: tuple[WaitEnvelope, Any]) -> dict[str, Any]:
    return {
        **answer(first, value),
        "more_answers": [{"question_id": e.question_id, "answer": v} for e, v in more],
    }


def start(thread_id: str) -> dict[str, Any]:
    return {"thread_id": thread_id, "input": {"done": []}}


def by_node(envelopes: tuple[WaitEnvelope, ...]) -> dict[str, WaitEnvelope]:
    def name(e: WaitEnvelope) -> str:
        return e.question["args"]["order_id"] if e.source else "notify"

    return {name(e): e for e in envelopes}


def test_one_message_resumes_every_question_in_one_step(inbox: MemoryAnnounce) -> None:
    prepared: list[str] = []
    graph = fan_out(prepared)
    asked = by_node(handle_message(graph, start("b-1"), inbox).report.envelopes)
    assert sorted(asked) == ["a", "b", "notify"]
    assert sorted(prepared) == ["a", "b", "notify"]
    prepared.clear()
    message = batch(
        asked["a"],
        {"action": "approve"},
        (asked["b"], {"action": "reject"}),
        (asked["notify"], "yes"),
    )
    done = handle_message(graph, message, inbox)
    assert done.outcome is Outcome.RESUMED
    assert not done.parked
    # Each node's work before its question ran once more, not once per answer.
    assert sorted(prepared) == ["a", "b", "notify"]
    # b was rejected: its @wait call returns the answer in the body's place.
    assert sorted(map(str, done.result["done"])) == sorted(
        ["notify: yes", "refunded a", str({"action": "reject"})]
    )


def test_one_bad_answer_refuses_the_whole_message_and_nothing_is_saved(
    inbox: MemoryAnnounce,
) -> None:
    prepared: list[str] = []
    graph = fan_out(prepared)
    asked = by_node(handle_message(graph, start("b-2"), inbox).report.envelopes)
    # A batch entry the framework could not store is refused before anything runs.
    huge = batch(asked["a"], {"action": "approve"}, (asked["notify"], 2**70))
    refused = handle_message(graph, huge, inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert asked["notify"].question_id in (refused.detail or "")
    assert sorted(prepared) == ["a", "b", "notify"]  # only the start ran
    # An entry a @wait call refuses only when its task runs (arguments it does not have) is
    # refused without being saved; a parallel task answered in the same step completes (its
    # body runs once), and the refused question stays pending under its id.
    bad_args = {"action": "approve", "args": {"amount": 5}}
    message = batch(asked["a"], {"action": "approve"}, (asked["b"], bad_args))
    refused = handle_message(graph, message, inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert "amount" in (refused.detail or "")
    pending = graph.get_state({"configurable": {"thread_id": "b-2"}}).interrupts
    assert asked["b"].question_id in {i.id for i in pending}
    good = batch(
        asked["a"], {"action": "approve"}, (asked["b"], {"action": "approve"}), (asked["notify"], 1)
    )
    done = handle_message(graph, good, inbox)
    assert done.outcome is Outcome.RESUMED
    assert sorted(map(str, done.result["done"])) == ["notify: 1", "refunded a", "refunded b"]


def test_answers_no_longer_pending_are_left_out(inbox: MemoryAnnounce) -> None:
    prepared: list[str] = []
    graph = fan_out(prepared)
    asked = by_node(handle_message(graph, start("b-3"), inbox).report.envelopes)
    first = handle_message(graph, answer(asked["a"], {"action": "approve"}), inbox)
    assert first.outcome is Outcome.RESUMED
    message = batch(
        asked["a"],
        {"action": "reject"},  # a second answer: the first stands
        (asked["b"], {"action": "approve"}),
        (asked["notify"], "no"),
    )
    done = handle_message(graph, message, inbox)
    assert done.outcome is Outcome.RESUMED
    assert done.detail is not None
    assert asked["a"].question_id in done.detail
    assert "left out" in done.detail
    assert sorted(map(str, done.result["done"])) == ["notify: no", "refunded a", "refunded b"]
    again = handle_message(graph, message, inbox)
    assert again.outcome is Outcome.DUPLICATE
