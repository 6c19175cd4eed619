"""Edge inputs the reliability suite's property tests found (tests/reliability/test_properties.py)."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from pydantic import ValidationError

from agent_wait.core import Answer, WaitPolicy, canonical_json, parse_duration, parse_message


@pytest.mark.parametrize("text", ["P142857143W", "P99999999999999999999D", "PT1" + "0" * 400 + "S"])
def test_durations_past_timedeltas_range_are_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"timeout: .* longer than 100 years"):
        parse_duration(text, "timeout")
    with pytest.raises(ValidationError, match="timeout"):
        WaitPolicy(timeout=text)


@pytest.mark.parametrize("value", [1e-300, 4e-7, "PT0.0000001S"])
def test_durations_below_a_microsecond_are_refused(value: object) -> None:
    with pytest.raises(ValueError, match="answer_ttl"):
        parse_duration(value, "answer_ttl")


@pytest.mark.parametrize("text", ["P\u0663D", "PT1\u017f", "P\uff13D"])
def test_durations_are_ascii(text: str) -> None:
    with pytest.raises(ValueError, match="is not an ISO 8601 duration"):
        parse_duration(text, "timeout")


def test_the_longest_duration_still_parses() -> None:
    assert parse_duration("P36525D", "timeout") == timedelta(days=36_525)
    assert parse_duration(" pt1m30,5s\n", "timeout") == timedelta(seconds=90.5)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (2.0**53, 2**53),
        (1e16, Decimal("1E+16")),
        (1e300, int(1e300)),
        (1e-05, Decimal("0.00001")),
        (1.1754943508222875e-38, Decimal("1.1754943508222875E-38")),
        (123456.789e10, Decimal("1234567890000000")),
    ],
)
def test_equal_numbers_render_alike_whatever_their_type(a: object, b: object) -> None:
    assert canonical_json({"n": a}) == canonical_json({"n": b})


def test_a_decimal_finer_than_a_float_stays_a_string() -> None:
    assert canonical_json(Decimal("0.10000000000000000001")) == '"0.10000000000000000001"'


@pytest.mark.parametrize(
    "message", [b"", b"{", "not json", b"\xff\xfe", "[" * 300 + "]" * 300, '"\\ud800"']
)
def test_messages_that_are_not_json_are_a_validation_error(message: str | bytes) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_message(message)
    [error] = refused.value.errors()
    assert error["type"] == "json_invalid"


def _nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_an_answer_nests_as_deep_as_json_text_allows_and_no_deeper() -> None:
    deepest = {"thread_id": "t", "question_id": "q", "answer": _nested(199)}
    assert Answer.model_validate(deepest).answer == _nested(199)
    assert parse_message(json.dumps(deepest)).model_dump()["answer"] == _nested(199)
    deeper = {**deepest, "answer": _nested(200)}
    with pytest.raises(ValidationError, match="json_invalid"):
        parse_message(json.dumps(deeper))
    for too_deep in (_nested(200), {"a": _nested(900)}):
        with pytest.raises(ValidationError) as refused:
            parse_message({"thread_id": "t", "question_id": "q", "answer": too_deep})
        [error] = refused.value.errors()
        assert error["loc"] == ("answer",)
        assert "nested deeper than 199 levels" in error["msg"]
