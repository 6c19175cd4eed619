"""Property tests of the contract: durations, canonical ids, envelope JSON and inbound parsing.

tests/core/test_canonical.py already checks that ids ignore top-level key order and that
canonical JSON is a fixed point; these go further: nested reordering, other number forms,
any unicode, the JSON Schemas under docs/schema, and inputs that are not messages at all.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jsonschema
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agent_wait.core import (
    Answer,
    Question,
    StartMessage,
    WaitEnvelope,
    WaitPolicy,
    build_envelope,
    canonical_json,
    derive_question_id,
    is_answer,
    parse_duration,
    parse_message,
)

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schema"
HUNDRED_YEARS = 36_525 * 86_400
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _validator(kind: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


ENVELOPE_SCHEMA = _validator("envelope")
ANSWER_SCHEMA = _validator("answer")
START_SCHEMA = _validator("start")


# --- durations ---------------------------------------------------------------------------------

_SECONDS = {"W": 604_800, "D": 86_400, "H": 3_600, "M": 60, "S": 1}


def reference_duration(text: str) -> Fraction | None:
    """An independent reading of the documented grammar; the exact seconds, or None if invalid.

    ``P[nW][nD][T[nH][nM][nS]]`` with ASCII digits and an optional ``.``/``,`` fraction, case and
    surrounding whitespace ignored, at least one part, ``T`` only before a time part; years
    and months (no fixed length) are not part of it.
    """
    body = text.strip()
    if not body.isascii():
        return None
    body = body.upper()
    if not body.startswith("P"):
        return None
    date, has_time, clock = body[1:].partition("T")
    total = Fraction(0)
    parts = 0
    for segment, units in ((date, "WD"), (clock, "HMS")):
        for number, unit in re.findall(r"([^A-Z]*)([A-Z])", segment):
            if unit not in units or not re.fullmatch(r"[0-9]+(?:[.,][0-9]+)?", number):
                return None
            units = units[units.index(unit) + 1 :]  # each unit once, in order
            total += Fraction(number.replace(",", ".")) * _SECONDS[unit]
            parts += 1
        if re.sub(r"[^A-Z]*[A-Z]", "", segment):
            return None  # digits after the last designator
    if parts == 0 or (has_time and not clock):
        return None
    return total


def _number_text(draw: Any) -> str:
    whole = draw(st.integers(0, 10**6) | st.integers(0, 10**20))
    if draw(st.booleans()):
        return str(whole)
    fraction = draw(st.text(alphabet="0123456789", min_size=1, max_size=3))
    return f"{whole}{draw(st.sampled_from('.,'))}{fraction}"


@st.composite
def iso_durations(draw: Any) -> str:
    date = "".join(f"{_number_text(draw)}{u}" for u in "WD" if draw(st.booleans()))
    clock = "".join(f"{_number_text(draw)}{u}" for u in "HMS" if draw(st.booleans()))
    assume(date or clock)
    text = f"P{date}{'T' + clock if clock else ''}"
    return draw(st.sampled_from([text, text.lower(), f" {text}\n"]))


@SETTINGS
@example("P142857143W")
@given(iso_durations())
def test_every_valid_iso_duration_parses_to_its_exact_length(text: str) -> None:
    seconds = reference_duration(text)
    assert seconds is not None
    if 0 < seconds <= HUNDRED_YEARS:
        parsed = parse_duration(text, "timeout")
        assert abs(Fraction(parsed.total_seconds()) - seconds) <= Fraction(1, 10**6)
        # The canonical text the envelope carries (answer_ttl) reads back as the same length.
        assert WaitPolicy(answer_ttl=text).answer_ttl == parsed
    else:
        # Zero, or longer than a century: refused with a ValueError naming the field (pydantic
        # turns it into a ValidationError), never an OverflowError from timedelta.
        with pytest.raises(ValueError, match="timeout"):
            parse_duration(text, "timeout")
        with pytest.raises(ValidationError, match="timeout"):
            WaitPolicy(timeout=text)


@SETTINGS
@example("P\u0663D")  # an Arabic-Indic digit three: a digit to Python, not to ISO 8601
@example("PT1\u017f")  # LATIN SMALL LETTER LONG S, which upper() turns into "S"
@example("P1DT")
@example("P1M")
@given(
    st.one_of(
        st.text(alphabet="PpTtWDHMSYms0123456789.,- ", max_size=16),
        st.text(max_size=12).map(lambda t: "P" + t),
        st.text(max_size=12).map(lambda t: "PT" + t),
    )
)
def test_duration_text_is_accepted_exactly_when_it_is_valid(text: str) -> None:
    seconds = reference_duration(text)
    # Below a microsecond the length rounds to zero (timedelta's resolution): refused as such.
    assume(seconds is None or seconds == 0 or seconds >= Fraction(1, 10**6))
    valid = seconds is not None and 0 < seconds <= HUNDRED_YEARS
    if valid:
        parse_duration(text, "answer_ttl")
    else:
        with pytest.raises(ValueError, match="answer_ttl"):
            parse_duration(text, "answer_ttl")


@SETTINGS
@example(1e-300)
@given(
    st.one_of(
        st.integers(-(10**30), 10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
    )
)
def test_seconds_are_accepted_exactly_when_positive_finite_and_at_most_a_century(
    value: float,
) -> None:
    if isinstance(value, bool) or not math.isfinite(value) or not 0 < value <= HUNDRED_YEARS:
        valid = False
    else:
        # A positive length that rounds to zero at timedelta's microsecond resolution is zero.
        valid = timedelta(seconds=value) > timedelta(0)
    if valid:
        assert parse_duration(value, "timeout") == timedelta(seconds=value)
    else:
        with pytest.raises(ValueError, match="timeout"):
            parse_duration(value, "timeout")


# --- canonical JSON and question ids -----------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=25,
)


def _twin(value: Any, draw: Any) -> Any:
    """The same JSON value written differently: keys reordered at every level, numbers as
    another equal type (``1`` / ``1.0`` / ``Decimal("1.00")``), lists as tuples."""
    if isinstance(value, dict):
        items = list(value.items())
        order = draw(st.permutations(range(len(items))))
        return {items[i][0]: _twin(items[i][1], draw) for i in order}
    if isinstance(value, list):
        items = [_twin(v, draw) for v in value]
        return tuple(items) if draw(st.booleans()) else items
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        forms = [
            value,
            Decimal(value),
            Decimal(f"{value}.000"),
            Decimal(value).scaleb(2).scaleb(-2),
        ]
        if float(value) == value:
            forms.append(float(value))
        return draw(st.sampled_from(forms))
    assert isinstance(value, float)
    if value.is_integer():
        # Exactly equal forms (a big float's repr is shorter than its exact value).
        forms = [value, int(value), Decimal(int(value))]
    else:
        # The documented rule: a float equals the Decimal of its shortest repr ("0.1").
        forms = [value, Decimal(repr(value))]
    return draw(st.sampled_from(forms))


@st.composite
def twins(draw: Any) -> tuple[Any, Any]:
    value = draw(st.dictionaries(st.text(max_size=8), json_values, max_size=5))
    return value, _twin(value, draw)


@SETTINGS
@example(({"n": 2.0**53}, {"n": Decimal(2**53)}), "t", "f")
@example(({"n": 1e-05}, {"n": Decimal("0.00001")}), "t", "f")
@given(twins(), st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_ids_are_stable_under_nested_reordering_and_number_forms(
    pair: tuple[Any, Any], thread_id: str, function: str
) -> None:
    value, twin = pair
    assert canonical_json(twin) == canonical_json(value)
    assert derive_question_id(thread_id, function, twin) == derive_question_id(
        thread_id, function, value
    )


@SETTINGS
@given(json_values)
def test_canonical_json_is_utf8_text_of_the_same_value(value: Any) -> None:
    text = canonical_json(value)
    # No whitespace between tokens, no \u escapes for printable text: one encoding per value.
    for match in re.finditer(r"\\u([0-9a-f]{4})", text):
        assert int(match.group(1), 16) < 0x20, f"escaped {match.group(0)} in {text!r}"
    assert json.loads(text.encode("utf-8")) == json.loads(json.dumps(value))
    assert text == json.dumps(
        json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


@SETTINGS
@given(st.text(), st.text())
def test_distinct_text_gives_distinct_ids(a: str, b: str) -> None:
    assume(a != b)
    assert derive_question_id("t", "f", {"x": a}) != derive_question_id("t", "f", {"x": b})


# --- envelopes, answers and start messages against docs/schema ---------------------------------

names = st.text(min_size=1, max_size=20)
durations = st.one_of(
    st.none(),
    st.integers(1, 10**6),
    st.sampled_from(["PT15M", "P3D", "P1DT12H", "PT0.5S", "P2W", "pt1h30m"]),
)
tags = st.dictionaries(names.filter(lambda n: bool(n.strip())), st.text(max_size=20), max_size=12)
policies = st.builds(
    WaitPolicy,
    timeout=durations,
    default=json_values,
    answer_ttl=durations,
    allowed_actions=st.lists(
        names.filter(lambda n: bool(n.strip())), min_size=1, max_size=4, unique=True
    ).map(tuple),
    tags=tags,
    correlation=st.none() | st.fixed_dictionaries({"provider": names, "id": names}),
)
moments = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2400, 1, 1), timezones=st.just(UTC)
)
questions = st.builds(
    Question,
    question_id=names,
    question=json_values,
    policy=policies,
    asked_at=st.none() | moments,
    source=st.none() | st.fixed_dictionaries({"function": names}),
)


@SETTINGS
@given(
    questions,
    names,
    st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    moments,
)
def test_envelopes_round_trip_and_match_the_published_schema(
    question: Question, thread_id: str, reply_to: dict[str, Any] | None, now: datetime
) -> None:
    envelope = build_envelope(question, thread_id, reply_to=reply_to, now=now)
    data = envelope.to_json()
    document = json.loads(data)
    ENVELOPE_SCHEMA.validate(document)
    # The optional fields appear only when the question has them (or, for what the envelope
    # derives from the policy, such as the quorum or the follow-ups, when the envelope does).
    assert list(document) == [
        f
        for f, info in WaitEnvelope.model_fields.items()
        if info.exclude_if is None
        or not info.exclude_if(
            getattr(question, f) if f in Question.model_fields else getattr(envelope, f)
        )
    ]
    again = WaitEnvelope.model_validate_json(data)
    assert again == envelope
    assert again.to_json() == data
    assert WaitEnvelope.model_validate(document).to_dict() == document
    assert again.dedupe_key == f"wait.created:{quote(thread_id, safe='')}:{question.question_id}"
    if document["answer_ttl"] is not None:
        assert parse_duration(document["answer_ttl"], "answer_ttl") == question.policy.answer_ttl


answers = st.fixed_dictionaries(
    {"thread_id": names, "question_id": names, "answer": json_values},
    optional={
        "valid_until": moments.map(lambda m: m.strftime("%Y-%m-%dT%H:%M:%SZ")),
        "note": json_values,
    },
)
starts = st.fixed_dictionaries(
    {"thread_id": names}, optional={"input": json_values, "extra": json_values}
)


@SETTINGS
@given(answers)
def test_answers_round_trip_and_match_the_published_schema(message: dict[str, Any]) -> None:
    ANSWER_SCHEMA.validate(message)
    parsed = parse_message(json.dumps(message))
    assert isinstance(parsed, Answer)
    assert is_answer(message)
    assert parsed.model_dump(exclude_unset=True) == message
    ANSWER_SCHEMA.validate(json.loads(parsed.model_dump_json(exclude_unset=True)))


@SETTINGS
@given(starts)
def test_start_messages_round_trip_and_match_the_published_schema(
    message: dict[str, Any],
) -> None:
    START_SCHEMA.validate(message)
    parsed = parse_message(json.dumps(message).encode())
    assert isinstance(parsed, StartMessage)
    assert not is_answer(message)
    assert parsed.model_dump(exclude_unset=True) == message


@st.composite
def altered_envelopes(draw: Any) -> dict[str, Any]:
    """A valid envelope document with some fields replaced by arbitrary JSON."""
    envelope = build_envelope(draw(questions), draw(names), now=draw(moments))
    document = envelope.to_dict()
    for name in draw(st.sets(st.sampled_from(list(document)), max_size=3)):
        document[name] = draw(json_values)
    return document


@SETTINGS
@given(altered_envelopes())
def test_whatever_the_model_accepts_it_emits_in_the_schema(document: dict[str, Any]) -> None:
    try:
        envelope = WaitEnvelope.model_validate(document)
    except ValidationError:
        return
    emitted = envelope.to_dict()
    ENVELOPE_SCHEMA.validate(emitted)
    assert WaitEnvelope.model_validate(emitted) == envelope


# --- inbound parsing never crashes --------------------------------------------------------------

any_json = st.recursive(
    json_scalars | st.floats(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["thread_id", "question_id", "answer", "input", "valid_until", "x"])
            | st.text(max_size=6),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@SETTINGS
@example(b"")
@given(
    st.one_of(
        any_json,
        any_json.map(lambda v: json.dumps(v)),
        any_json.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=64),
        st.text(max_size=64),
        st.integers(1, 400).map(lambda n: "[" * n + "]" * n),
        st.integers(1, 400).map(lambda n: '{"a":' * n + "1" + "}" * n),
    )
)
def test_is_answer_and_parse_message_never_crash(message: Any) -> None:
    assert is_answer(message) in (True, False)
    try:
        parsed = parse_message(message)
    except ValidationError as error:
        problems = error.errors()
    else:
        assert isinstance(parsed, Answer | StartMessage)
        problems = None
    assert problems is None or problems  # a refusal always names what is wrong
