"""The envelope and inbound messages follow the message formats field by field."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from agent_wait.core import (
    Answer,
    CallContext,
    PendingResult,
    Question,
    StartMessage,
    WaitEnvelope,
    WaitPolicy,
    build_envelope,
    is_answer,
    message_warnings,
    parse_message,
)

ENVELOPE_FIELDS = [
    "type",
    "event_id",
    "thread_id",
    "question_id",
    "question",
    "allowed_actions",
    "expires_at",
    "default",
    "answer_ttl",
    "source",
    "reply_to",
    "reply_with",
    "correlation",
    "tags",
]
NOW = datetime(2026, 9, 11, 9, 0, 0, tzinfo=UTC)


def refund_question(**policy: object) -> Question:
    return Question(
        question_id="a1b2c3d4e5f60718",
        question={"function": "issue_refund", "args": {"order_id": "order-4471", "amount": 41000}},
        policy=WaitPolicy.model_validate(policy),
        source={"function": "issue_refund"},  # type: ignore[arg-type]
    )


def test_envelope_has_exactly_the_contract_fields_in_order() -> None:
    envelope = build_envelope(refund_question(), "order-4471", now=NOW)
    assert list(json.loads(envelope.to_json())) == ENVELOPE_FIELDS
    # Optional fields follow the contract's, and appear only when they have a value.
    assert list(WaitEnvelope.model_fields) == [
        *ENVELOPE_FIELDS,
        "answer_schema",
        "context",
        "approvers",
        "allow_self_approval",
        "started_by",
        "quorum",
        "follow_up",
    ]


def test_an_answer_schema_appears_only_when_the_question_states_one() -> None:
    schema = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}
    asked = refund_question().model_copy(update={"answer_schema": schema})
    envelope = build_envelope(asked, "order-4471", now=NOW)
    data = json.loads(envelope.to_json())
    assert list(data) == [*ENVELOPE_FIELDS, "answer_schema"]
    assert data["answer_schema"] == schema
    assert envelope.to_dict()["answer_schema"] == schema
    assert WaitEnvelope.model_validate_json(envelope.to_json()) == envelope
    plain = build_envelope(refund_question(), "order-4471", now=NOW)
    assert "answer_schema" not in plain.to_dict()
    assert WaitEnvelope.model_validate_json(plain.to_json()).answer_schema is None


def test_a_call_context_appears_only_when_the_question_has_one() -> None:
    context = CallContext(tool="issue_refund", tool_call_id="call_7")
    asked = refund_question().model_copy(update={"context": context})
    envelope = build_envelope(asked, "order-4471", now=NOW)
    data = json.loads(envelope.to_json())
    assert list(data) == [*ENVELOPE_FIELDS, "context"]
    assert data["context"] == {"tool": "issue_refund", "tool_call_id": "call_7"}
    assert WaitEnvelope.model_validate_json(envelope.to_json()) == envelope
    # source is the @wait function's, as before: the context does not replace it.
    assert data["source"] == {"function": "issue_refund"}
    plain = build_envelope(refund_question(), "order-4471", now=NOW)
    assert list(json.loads(plain.to_json())) == ENVELOPE_FIELDS


def test_an_empty_call_context_is_refused() -> None:
    with pytest.raises(ValidationError, match="names none of node, namespace, tool"):
        CallContext()
    with pytest.raises(ValidationError, match="tool_call_id"):
        CallContext(tool_call_id="")


def test_envelope_values_follow_the_policy() -> None:
    envelope = build_envelope(
        refund_question(
            timeout="P3D",
            default={"action": "reject", "reason": "no response within P3D"},
            answer_ttl="PT15M",
            tags={"approver_group": "finance"},
            correlation={"provider": "jira", "id": "FIN-1"},
        ),
        "order-4471",
        reply_to={"queue_url": "https://example/answers"},
        now=NOW,
    )
    body = json.loads(envelope.to_json())
    assert body["type"] == "wait.created"
    assert len(body["event_id"]) == 26
    assert body["expires_at"] == "2026-09-14T09:00:00Z"
    assert body["answer_ttl"] == "PT15M"
    assert body["default"] == {"action": "reject", "reason": "no response within P3D"}
    assert body["allowed_actions"] == ["approve", "reject"]
    assert body["source"] == {"function": "issue_refund"}
    assert body["reply_to"] == {"queue_url": "https://example/answers"}
    assert body["reply_with"] == {
        "thread_id": "order-4471",
        "question_id": "a1b2c3d4e5f60718",
        "answer": None,
    }
    assert body["correlation"] == {"provider": "jira", "id": "FIN-1"}
    assert body["tags"] == {"approver_group": "finance"}
    assert envelope.dedupe_key == "wait.created:order-4471:a1b2c3d4e5f60718"


def test_nulls_where_the_policy_is_silent() -> None:
    body = json.loads(
        build_envelope(Question(question_id="q", question="ok?"), "t", now=NOW).to_json()
    )
    assert body["expires_at"] is None
    assert body["answer_ttl"] is None
    assert body["default"] is None
    assert body["source"] is None
    assert body["correlation"] is None
    assert body["reply_to"] is None
    assert body["tags"] == {}


def test_event_id_is_fresh_per_build_and_question_id_stable() -> None:
    first = build_envelope(refund_question(), "t", now=NOW)
    second = build_envelope(refund_question(), "t", now=NOW)
    assert first.event_id != second.event_id
    assert first.dedupe_key == second.dedupe_key


def test_asked_at_moves_expires_at() -> None:
    question = refund_question(timeout="PT1H").model_copy(
        update={"asked_at": NOW - timedelta(minutes=30)}
    )
    assert build_envelope(question, "t", now=NOW).expires_at == "2026-09-11T09:30:00Z"


def test_envelope_round_trips_and_serialisation_is_deterministic() -> None:
    envelope = build_envelope(refund_question(timeout=60, tags={"b": "2", "a": "1"}), "t", now=NOW)
    again = WaitEnvelope.model_validate_json(envelope.to_json())
    assert again == envelope
    assert again.to_json() == envelope.to_json()


def test_documented_example_validates() -> None:
    documented = {
        "type": "wait.created",
        "event_id": "01JAV3K2R8Q9WZ7M4X1YB6N0PD",
        "thread_id": "order-4471",
        "question_id": "a1b2c3d4e5f60718",
        "question": {
            "function": "issue_refund",
            "args": {"order_id": "order-4471", "amount": 41000},
        },
        "allowed_actions": ["approve", "reject"],
        "expires_at": "2026-09-14T09:00:00Z",
        "default": {"action": "reject", "reason": "no response within P3D"},
        "answer_ttl": "PT15M",
        "source": {"function": "issue_refund"},
        "reply_to": None,
        "reply_with": {
            "thread_id": "order-4471",
            "question_id": "a1b2c3d4e5f60718",
            "answer": None,
        },
        "correlation": None,
        "tags": {"approver_group": "finance"},
    }
    envelope = WaitEnvelope.model_validate(documented)
    assert envelope.to_dict() == documented


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("type", "wait.answered"),
        ("event_id", "not-a-ulid"),
        ("expires_at", "tomorrow"),
        ("tags", None),
        ("answer_ttl", "P1M"),
        ("thread_id", ""),
    ],
)
def test_invalid_envelope_fields_are_named(field: str, value: object) -> None:
    body = build_envelope(refund_question(), "t", now=NOW).to_dict()
    body[field] = value
    with pytest.raises(ValidationError) as info:
        WaitEnvelope.model_validate(body)
    assert field in str(info.value)


def test_reply_with_must_match_the_envelope() -> None:
    body = build_envelope(refund_question(), "t", now=NOW).to_dict()
    body["reply_with"]["question_id"] = "other"
    with pytest.raises(ValidationError, match="reply_with"):
        WaitEnvelope.model_validate(body)


def test_offset_timestamps_are_normalised_to_utc_z() -> None:
    body = build_envelope(refund_question(), "t", now=NOW).to_dict()
    body["expires_at"] = "2026-09-14T11:00:00+02:00"
    assert WaitEnvelope.model_validate(body).expires_at == "2026-09-14T09:00:00Z"


def test_is_answer_is_presence_of_question_id() -> None:
    assert is_answer({"thread_id": "t", "question_id": "q", "answer": None})
    assert not is_answer({"thread_id": "t", "input": {}})
    for junk in (None, 1, "question_id", ["question_id"], b"{}"):
        assert not is_answer(junk)


def test_parse_message_distinguishes_answers_and_starts() -> None:
    answer = parse_message(
        '{"thread_id": "t", "question_id": "q", "answer": {"action": "approve"}}'
    )
    assert isinstance(answer, Answer)
    assert answer.answer == {"action": "approve"}
    start = parse_message({"thread_id": "t", "input": {"amount": 1}})
    assert isinstance(start, StartMessage)


@pytest.mark.parametrize(
    ("message", "keys"),
    [
        ({"thread_id": "t", "questionid": "q", "answer": 1}, ["'questionid'", "answer"]),
        ({"thread_id": "t", "questionId": "q"}, ["'questionId'"]),
        ({"thread_id": "t", "question-id": "q"}, ["'question-id'"]),
        ({"thread_id": "t", "qestion_id": "q"}, ["'qestion_id'"]),
        ({"thread_id": "t", "answer": {"action": "approve"}}, ["answer"]),
    ],
)
def test_message_warnings_flag_a_mistyped_answer(message: dict[str, Any], keys: list[str]) -> None:
    warnings = message_warnings(message)
    assert len(warnings) == len(keys)
    for warning, key in zip(warnings, keys, strict=True):
        assert key in warning
        assert "did you mean" in warning
        assert "question_id" in warning


@pytest.mark.parametrize(
    "message",
    [
        {"thread_id": "t", "input": {"answer": 1, "questionid": 2}},  # inside input: the agent's
        {"thread_id": "t", "question": "refund?", "questions": []},  # related words, not typos
        {"thread_id": "t", "question_id": "q", "answer": 1},  # a real answer
        ["not", "a", "mapping"],
    ],
)
def test_message_warnings_leave_clean_messages_alone(message: Any) -> None:
    assert message_warnings(message) == []


def test_parse_message_logs_a_mistyped_answer(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_wait"):
        start = parse_message('{"thread_id": "t-9", "questionid": "q", "answer": 1}')
    assert isinstance(start, StartMessage)  # the contract: no question_id, a start message
    assert [r.name for r in caplog.records] == ["agent_wait.messages"] * 2
    assert all(r.levelno == logging.WARNING for r in caplog.records)
    # One line per key, in the message's order.
    assert "thread 't-9'" in caplog.records[0].getMessage()
    assert "'questionid'" in caplog.records[0].getMessage()
    assert "'answer'" in caplog.records[1].getMessage()


def test_answer_requires_its_fields_and_keeps_null_answer() -> None:
    assert (
        Answer.model_validate({"thread_id": "t", "question_id": "q", "answer": None}).answer is None
    )
    with pytest.raises(ValidationError, match="answer"):
        Answer.model_validate({"thread_id": "t", "question_id": "q"})
    with pytest.raises(ValidationError, match="valid_until"):
        Answer.model_validate(
            {"thread_id": "t", "question_id": "q", "answer": 1, "valid_until": "soon"}
        )


def test_pending_result_shape() -> None:
    assert PendingResult(question_id="7f3e", function="issue_refund").model_dump() == {
        "status": "pending_approval",
        "question_id": "7f3e",
        "function": "issue_refund",
    }


def test_an_answer_with_more_answers_splits_into_single_answers() -> None:
    message = {
        "thread_id": "order-4471",
        "question_id": "q1",
        "answer": {"action": "approve"},
        "token": "v1.k.f.m",
        "more_answers": [
            {"question_id": "q2", "answer": "no", "valid_until": "2026-09-12T09:00:00Z"},
            {"question_id": "q3", "answer": [1], "token": "v1.k.g.n"},
        ],
    }
    parsed = parse_message(message)
    assert isinstance(parsed, Answer)
    first, second, third = parsed.entries()
    assert (first.question_id, first.answer, first.more_answers) == (
        "q1",
        {"action": "approve"},
        [],
    )
    assert first.model_extra == {"token": "v1.k.f.m"}
    assert (second.thread_id, second.question_id, second.answer) == ("order-4471", "q2", "no")
    assert second.valid_until == "2026-09-12T09:00:00Z"
    assert third.model_extra == {"token": "v1.k.g.n"}
    # A host that does not know the field still reads the first answer.
    assert (parsed.question_id, parsed.answer) == ("q1", {"action": "approve"})


def test_a_single_answer_is_unchanged_by_the_batch_field() -> None:
    parsed = parse_message({"thread_id": "t", "question_id": "q1", "answer": 1})
    assert isinstance(parsed, Answer)
    assert parsed.entries() == [parsed]
    assert parsed.model_dump() == {
        "thread_id": "t",
        "question_id": "q1",
        "answer": 1,
        "valid_until": None,
    }


@pytest.mark.parametrize(
    ("more", "error"),
    [
        ([{"question_id": "q1", "answer": 2}], "question 'q1' is answered twice"),
        ([{"question_id": "q2", "answer": 1}, {"question_id": "q2", "answer": 2}], "'q2'"),
        ([{"answer": 2}], "more_answers.0.question_id"),
        ([{"question_id": "q2"}], "more_answers.0.answer"),
        ([{"question_id": "", "answer": 2}], "more_answers.0.question_id"),
    ],
)
def test_malformed_more_answers_are_refused_naming_the_field(
    more: list[dict[str, Any]], error: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(error)):
        parse_message({"thread_id": "t", "question_id": "q1", "answer": 1, "more_answers": more})


def test_answered_by_appears_only_when_the_sender_names_who_answered() -> None:
    plain = parse_message({"thread_id": "t", "question_id": "q1", "answer": 1})
    named = parse_message(
        {
            "thread_id": "t",
            "question_id": "q1",
            "answer": 1,
            "answered_by": "alice@example.com",
            "more_answers": [{"question_id": "q2", "answer": 2}],
        }
    )
    assert isinstance(plain, Answer)
    assert isinstance(named, Answer)
    assert plain.answered_by is None
    assert "answered_by" not in plain.model_dump(mode="json")
    assert named.model_dump(mode="json")["answered_by"] == "alice@example.com"
    # Whoever sent the message answered each of its answers.
    assert [e.answered_by for e in named.entries()] == ["alice@example.com"] * 2
    assert named.model_extra == {}


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("", "expected a name such as 'alice', got ''"),
        ("   ", "expected a name such as 'alice', got '   '"),
        (7, "expected a name such as 'alice', got int 7"),
        (["alice"], "got list ['alice']"),
        ("a" * 65, f"at most 64 characters, got 65: '{'a' * 65}'"),
        ("alice\nbob", "control characters are not allowed, got 'alice\\nbob'"),
    ],
)
def test_a_malformed_answered_by_is_refused_naming_the_field_and_value(
    value: object, error: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        parse_message({"thread_id": "t", "question_id": "q1", "answer": 1, "answered_by": value})
    [problem] = raised.value.errors()
    assert problem["loc"] == ("answered_by",)
    assert error in problem["msg"]
