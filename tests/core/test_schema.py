"""The committed JSON Schemas match the models, and the contract's examples validate against them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agent_wait.core import (
    Answer,
    CallContext,
    LifecycleEvent,
    MemoryAnnounce,
    StartMessage,
    WaitEnvelope,
    publish,
)
from agent_wait.host._cli import json_schema, schema_text
from agent_wait.testing import sample_questions

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "schema"


def example(kind: str) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / "examples" / f"{kind}.json").read_text(encoding="utf-8"))


def validator(kind: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


@pytest.mark.parametrize("kind", ["envelope", "answer", "start", "lifecycle"])
def test_committed_schema_is_current(kind: str) -> None:
    committed = (SCHEMA_DIR / f"{kind}.schema.json").read_text(encoding="utf-8")
    assert committed == schema_text(kind), (
        f"docs/schema/{kind}.schema.json is stale; regenerate it: "
        f"agent-wait schema {kind} > docs/schema/{kind}.schema.json"
    )


def test_documented_examples_validate() -> None:
    envelope = example("envelope")
    validator("envelope").validate(envelope)
    assert WaitEnvelope.model_validate(envelope).to_dict() == envelope
    validator("answer").validate(example("answer"))
    Answer.model_validate(example("answer"))
    validator("start").validate(example("start"))
    StartMessage.model_validate(example("start"))


def test_published_envelopes_validate() -> None:
    sink = MemoryAnnounce()
    report = publish(
        sample_questions(3), "order-4471", sink, reply_to={"queue": "answers"}, strict=True
    )
    check = validator("envelope")
    for envelope in report.envelopes:
        check.validate(json.loads(envelope.to_json()))


def test_an_envelope_with_an_answer_schema_validates() -> None:
    schema = {"type": "array", "prefixItems": [{"type": "object"}], "minItems": 1}
    asked = sample_questions(1)[0].model_copy(update={"answer_schema": schema})
    [envelope] = publish([asked], "order-4471", MemoryAnnounce(), strict=True).envelopes
    data = json.loads(envelope.to_json())
    assert data["answer_schema"] == schema
    validator("envelope").validate(data)
    # Optional: the documented example (a question that states none) has no such key.
    assert "answer_schema" not in example("envelope")
    assert "answer_schema" not in json_schema("envelope")["required"]


def test_an_envelope_with_a_call_context_validates() -> None:
    context = CallContext(namespace="agent:1f0|tools:2a1", node="tools", tool_call_id="call_0")
    asked = sample_questions(1)[0].model_copy(update={"context": context})
    [envelope] = publish([asked], "order-4471", MemoryAnnounce(), strict=True).envelopes
    data = json.loads(envelope.to_json())
    # Only the keys the framework told appear.
    assert data["context"] == {
        "node": "tools",
        "namespace": "agent:1f0|tools:2a1",
        "tool_call_id": "call_0",
    }
    validator("envelope").validate(data)
    assert "context" not in example("envelope")
    assert "context" not in json_schema("envelope")["required"]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"event_id": "01JAV3K2R8Q9WZ7M4X1YB6N0P"}, ["event_id"]),
        ({"type": "wait.answered"}, ["type"]),
        ({"expires_at": "2026-09-14 09:00"}, ["expires_at"]),
        ({"expires_at": "2026-09-14T09:00:00+02:00"}, ["expires_at"]),
        ({"tags": {"approver_group": 3}}, ["tags", "approver_group"]),
        ({"allowed_actions": "approve"}, ["allowed_actions"]),
        (
            {"reply_with": {"thread_id": "order-4471", "question_id": "a", "answer": {"x": 1}}},
            ["reply_with", "answer"],
        ),
        ({"correlation": {"provider": "batch"}}, ["correlation"]),
        ({"answer_schema": None}, ["answer_schema"]),
        ({"answer_schema": "integer"}, ["answer_schema"]),
        ({"context": None}, ["context"]),
        ({"context": {}}, ["context"]),
        ({"context": {"node": ""}}, ["context", "node"]),
        ({"context": {"node": "tools", "graph": "agent"}}, ["context"]),
        ({"unexpected": 1}, []),
    ],
)
def test_schema_rejects_what_the_contract_forbids(change: dict[str, Any], path: list[str]) -> None:
    errors = list(validator("envelope").iter_errors({**example("envelope"), **change}))
    assert errors, f"the schema accepted {change}"
    assert any(list(error.absolute_path) == path for error in errors), [e.message for e in errors]


def test_schema_requires_every_envelope_field() -> None:
    assert json_schema("envelope")["required"] == [
        f for f, info in WaitEnvelope.model_fields.items() if info.exclude_if is None
    ]
    envelope = example("envelope")
    for field in envelope:
        partial = {k: v for k, v in envelope.items() if k != field}
        assert list(validator("envelope").iter_errors(partial)), (
            f"the schema accepts an envelope without {field}"
        )


def test_answer_schema_requires_the_reply_fields() -> None:
    check = validator("answer")
    for field in ("thread_id", "question_id", "answer"):
        partial = {k: v for k, v in example("answer").items() if k != field}
        assert list(check.iter_errors(partial)), (
            f"the answer schema accepts a message without {field}"
        )
    check.validate({**example("answer"), "answer": None, "extra": "kept"})


def test_the_lifecycle_example_validates_and_every_field_is_required() -> None:
    event = example("lifecycle")
    check = validator("lifecycle")
    check.validate(event)
    assert LifecycleEvent.model_validate(event).model_dump(mode="json") == event
    for field in event:
        partial = {k: v for k, v in event.items() if k != field}
        assert list(check.iter_errors(partial)), f"the schema accepts an event without {field}"
    for change in ({"type": "wait.created"}, {"at": "2026-09-12"}, {"extra": 1}):
        assert list(check.iter_errors({**event, **change})), f"the schema accepts {change}"


def test_the_answer_schema_takes_an_optional_answered_by_and_refuses_a_malformed_one() -> None:
    check = validator("answer")
    assert "answered_by" not in json_schema("answer")["required"]
    for name in ("alice", "Alice Smith", "alice@example.com", "a" * 64):
        check.validate({**example("answer"), "answered_by": name})
        Answer.model_validate({**example("answer"), "answered_by": name})
    for bad in ("", "   ", "a" * 65, "alice\nbob", "tab\there", 7, None):
        assert list(check.iter_errors({**example("answer"), "answered_by": bad})), (
            f"the answer schema accepts answered_by {bad!r}"
        )
