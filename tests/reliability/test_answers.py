"""The answer path of the three framework hosts: what reaches the tool, and what is refused.

Every thread here is parked on ``notify_customer``, whose ``decision`` parameter receives the
whole answer: the body always runs, so the ledger shows exactly what arrived, and a refused
answer must leave it empty.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import DeferredToolRequests
from pydantic_ai.messages import ToolCallPart

from agent_wait.core import InvalidAnswer, MemoryAnnounce, Outcome
from agent_wait.langgraph import resume_command
from agent_wait.pydantic_ai import deferred_results
from agent_wait.strands import interrupt_responses
from tests.reliability.agents import LangGraphHost, Ledger, PydanticAiHost, StrandsHost, ThreadHost

Parked = tuple[ThreadHost, Ledger, str, str]


@pytest.fixture(params=["langgraph", "pydantic_ai", "strands"])
def on_notify(request: pytest.FixtureRequest, tmp_path: Path) -> Parked:
    """A thread of each framework parked on ``notify_customer`` (the refund already approved)."""
    ledger = Ledger()
    hosts = {
        "langgraph": lambda: LangGraphHost(ledger),
        "pydantic_ai": lambda: PydanticAiHost(ledger),
        "strands": lambda: StrandsHost(ledger, tmp_path / "sessions"),
    }
    host = hosts[request.param]()
    thread_id = f"{host.framework}-0001"
    inbox = MemoryAnnounce()
    started = host.handle(
        {"thread_id": thread_id, "input": {"order_id": thread_id, "amount": 7}}, inbox
    )
    [refund] = started.question_ids
    approved = host.handle(
        {"thread_id": thread_id, "question_id": refund, "answer": {"action": "approve"}}, inbox
    )
    [notify] = approved.question_ids
    ledger.runs.clear()
    return host, ledger, thread_id, notify


def _answer(parked: Parked, answer: Any) -> Any:
    host, _, thread_id, question_id = parked
    message = {"thread_id": thread_id, "question_id": question_id, "answer": answer}
    return host.handle(message, MemoryAnnounce())


# --- answers every framework's persistence keeps unchanged --------------------------------------

STORABLE = [
    pytest.param(2**63 - 1, id="int64-max"),
    pytest.param(-(2**63), id="int64-min"),
    pytest.param(1.5e308, id="large-float"),
    pytest.param("\U0001f600 and \u2028", id="astral-text"),
]

UNSTORABLE = [
    pytest.param(2**63, "outside the signed 64-bit range", id="int64-max-plus-1"),
    pytest.param(-(2**63) - 1, "outside the signed 64-bit range", id="int64-min-minus-1"),
    pytest.param(98765432109876543210, "outside the signed 64-bit range", id="account-number"),
    pytest.param(2**64, "outside the signed 64-bit range", id="past-uint64"),
    pytest.param(math.nan, "not a finite number", id="nan"),
    pytest.param(-math.inf, "not a finite number", id="minus-infinity"),
    pytest.param("a\ud800b", "lone surrogate", id="lone-surrogate"),
    pytest.param({1: "one"}, "is not a string", id="int-key"),
    pytest.param({1, 2}, "is not a JSON value", id="set"),
]


@pytest.mark.parametrize("value", STORABLE)
def test_answers_at_the_storable_bounds_reach_the_tool_unchanged(
    on_notify: Parked, value: Any
) -> None:
    _, ledger, thread_id, _ = on_notify
    answer = {"action": "send", "account": value}
    handled = _answer(on_notify, answer)
    assert handled.outcome is Outcome.RESUMED, handled.detail
    [received] = ledger.decisions("notify_customer", thread_id)
    assert received == answer
    assert type(received["account"]) is type(value)


@pytest.mark.parametrize(("value", "reason"), UNSTORABLE)
def test_answers_the_persistence_cannot_keep_are_refused_before_anything_runs(
    on_notify: Parked, value: Any, reason: str
) -> None:
    host, ledger, thread_id, question_id = on_notify
    for _ in range(2):  # the redelivery of a refused answer is refused the same way
        handled = _answer(on_notify, {"action": "send", "account": value})
        assert handled.outcome is Outcome.INVALID_ANSWER
        assert reason in (handled.detail or "")
        assert "answer.account" in (handled.detail or "")
        assert ledger.runs == []
        assert host.pending(thread_id) == {question_id}
    # The question still takes a good answer, which runs the body once.
    handled = _answer(on_notify, {"action": "send", "account": "98765432109876543210"})
    assert handled.outcome is Outcome.RESUMED
    assert ledger.decisions("notify_customer", thread_id) == [
        {"action": "send", "account": "98765432109876543210"}
    ]
    assert host.finished(thread_id)


def test_the_resume_helpers_refuse_what_the_persistence_cannot_keep() -> None:
    # What a host built from the building blocks (instead of handle_message) gets.
    answer = {"thread_id": "t", "question_id": "0" * 32, "answer": {"n": 2**63}}
    with pytest.raises(InvalidAnswer, match=r"answer\.n: the integer 9223372036854775808"):
        resume_command(answer)
    with pytest.raises(InvalidAnswer, match=r"answers\[0\]\.answer\.n: the integer"):
        interrupt_responses(answer)
    requests = DeferredToolRequests(calls=[ToolCallPart("lookup", {}, tool_call_id="c1")])
    with pytest.raises(InvalidAnswer, match=r"answers\[0\]\.answer\.n: the integer"):
        deferred_results(requests, {**answer, "question_id": "c1"})
    assert resume_command({**answer, "answer": {"n": 2**63 - 1}}).resume == {
        "0" * 32: {"n": 2**63 - 1}
    }


# --- floats arrive as floats ----------------------------------------------------------------------

FLOATS = [
    pytest.param(1.0, id="one"),
    pytest.param(-0.0, id="negative-zero"),
    pytest.param(1e16, id="1e16"),
    pytest.param([1.0, 2.0], id="float-list"),
    pytest.param({"amount": 41000.0, "rate": 0.1}, id="float-object"),
]


def _shape(value: Any) -> Any:
    """``value`` with every number as (type, repr): 1.0 and 1, or -0.0 and 0.0, differ here."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_shape(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return (type(value).__name__, repr(value))


@pytest.mark.parametrize("value", FLOATS)
def test_float_answers_arrive_verbatim(on_notify: Parked, value: Any) -> None:
    _, ledger, thread_id, _ = on_notify
    answer = {"action": "send", "value": value}
    handled = _answer(on_notify, answer)
    assert handled.outcome is Outcome.RESUMED, handled.detail
    [received] = ledger.decisions("notify_customer", thread_id)
    assert _shape(received) == _shape(answer)
