"""The one answer check (answer_problem), the example a refusal shows, and the @wait answer schema."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent_wait.core import (
    Question,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    answer_problem,
    build_envelope,
    example_answer,
    publish,
)
from agent_wait.core._policy import UNSTATED
from agent_wait.host import AnswerNotAccepted, _wait, answer
from agent_wait.host._wait import wait_answer_schema
from agent_wait.host.adapter import make_wait, question_from_value
from tests.core.test_wait import FakeAdapter, Parked


class Address(BaseModel):
    street: str


def issue_refund(order_id: str, amount: int, note: str | None = None, to: Address | None = None):
    """A function with typed parameters, for its derived answer schema."""


def refund_envelope() -> Any:
    policy = WaitPolicy(allowed_actions=["approve", "reject"])
    params = inspect.signature(issue_refund).parameters.values()
    schema = wait_answer_schema(issue_refund, params, policy.allowed_actions)
    question = Question(
        question_id="q1",
        question={"function": "issue_refund", "args": {"order_id": "o-1", "amount": 5}},
        policy=policy,
        answer_schema=schema,
    )
    return build_envelope(question, "t1")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, "answer: null is not an answer"),
        ({"action": "approve", "args": {"amount": float("nan")}}, "answer.args.amount: nan is not"),
        ({"action": "approve", "args": {"amount": 2**63}}, "answer.args.amount: the integer"),
        (
            {"action": "approve", "reason": "\udc00"},
            "answer.reason: '\\udc00' is not valid Unicode",
        ),
        (
            {"action": "reject", "reason": "x" * 70_000},
            "answer: 70031 bytes of JSON, more than the 65536",
        ),
        ({"action": "escalate"}, "answer.action: 'escalate' is not one of the question's allowed"),
        ({"action": "approve", "args": {"amount": "5"}}, "answer.args.amount: '5' is not of type"),
        ({"action": "approve", "args": {"ammount": 5}}, "answer.args: Additional properties"),
        (
            {"action": "approve", "args": {"to": {}}},
            "answer.args.to: 'street' is a required property",
        ),
        ({"reason": "no action"}, "answer: 'action' is a required property"),
    ],
)
def test_each_refusal_names_the_field(value: Any, problem: str) -> None:
    found = answer_problem(refund_envelope(), value)
    assert found is not None
    assert found.startswith(problem), found


@pytest.mark.parametrize(
    "value",
    [
        {"action": "approve"},
        {"action": "approve", "args": {"amount": 40, "note": None, "to": {"street": "Main"}}},
        {"action": "reject", "reason": "duplicate", "note": "free fields are kept"},
    ],
)
def test_answers_the_function_takes_pass(value: Any) -> None:
    assert answer_problem(refund_envelope(), value) is None


@pytest.mark.parametrize(
    ("schema", "allowed", "example"),
    [
        (None, (), True),
        (None, ("approve", "reject"), {"action": "approve"}),
        ({"enum": ["visa", "amex"]}, (), "visa"),
        ({"const": 3}, (), 3),
        ({"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]}, (), 5),
        (
            {"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "required": ["a"]},
            (),
            {"a": "text"},
        ),
        (
            {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "number"}]},
            (),
            [True, 1],
        ),
        ({"type": "array", "items": {"type": "null"}, "minItems": 2}, (), [None, None]),
        ({"$ref": "#/$defs/A", "$defs": {"A": {"type": ["null", "string"]}}}, (), "text"),
    ],
)
def test_the_example_is_built_from_the_schema(
    schema: dict[str, Any] | None, allowed: tuple[str, ...], example: Any
) -> None:
    assert example_answer(schema, allowed) == example


def test_the_example_of_every_derived_schema_passes_its_own_check() -> None:
    envelope = refund_envelope()
    assert answer_problem(envelope, example_answer(envelope.answer_schema)) is None


def test_a_refused_answer_is_not_recorded_and_shows_a_valid_one(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    envelope = refund_envelope()
    question = Question(
        question_id="q1",
        question=envelope.question,
        policy=WaitPolicy(allowed_actions=["approve", "reject"]),
        answer_schema=envelope.answer_schema,
    )
    publish([question], "t1", SqliteAnnounce(inbox), strict=True)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        with pytest.raises(AnswerNotAccepted) as refused:
            answer("q1", "approve", answer={"args": {"amount": 1e400}}, store=store, entry=entry)
        assert refused.value.problem.startswith("answer.args.amount: inf is not a finite number")
        assert refused.value.example == {"action": "approve"}
        assert str(refused.value).endswith('nothing sent. A valid answer: {"action": "approve"}')
        # Forcing skips the actions and the schema, never what no framework can keep.
        with pytest.raises(AnswerNotAccepted, match="inf is not a finite number"):
            answer("q1", "maybe", answer={"x": float("inf")}, force=True, store=store, entry=entry)
        [stored] = store.find("q1")
        assert stored.is_open
        assert stored.answer is None
        assert entry.receive(10) == []


def test_the_wait_schema_is_built_once_per_function_and_travels_with_the_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[str] = []

    def counting(*args: Any) -> dict[str, Any]:
        built.append(args[0].__name__)
        return wait_answer_schema(*args)

    monkeypatch.setattr(_wait, "wait_answer_schema", counting)
    guarded = make_wait(FakeAdapter())(issue_refund)
    assert built == []  # decorating costs nothing: built when first asked
    parked: list[Any] = []
    for amount in (1, 2, 3):
        with pytest.raises(Parked) as raised:
            guarded("o-1", amount)
        parked.append(raised.value.payload)
    assert built == ["issue_refund"]
    question = question_from_value("q1", parked[-1])
    assert question.answer_schema is not None
    assert question.answer_schema["properties"]["action"] == {"enum": ["approve", "reject"]}
    envelope = build_envelope(question, "t1")
    assert answer_problem(envelope, {"action": "approve", "args": {"amount": 3}}) is None
    assert answer_problem(envelope, {"action": "approve", "args": {"amount": "x"}}) is not None


def test_a_question_without_a_schema_takes_any_json_but_null() -> None:
    envelope = build_envelope(Question(question_id="q", question="ok?", policy=UNSTATED), "t1")
    assert "answer_schema" not in envelope.to_dict()
    for value in (True, "y", {"action": "reject"}, [1]):
        assert answer_problem(envelope, value) is None
    assert answer_problem(envelope, None) == "answer: null is not an answer"
