"""WaitPolicy validation: every bad value fails at construction naming field and value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from agent_wait.core import WaitPolicy
from agent_wait.core._durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PT15M", timedelta(minutes=15)),
        ("P3D", timedelta(days=3)),
        ("P1W", timedelta(weeks=1)),
        ("P1DT12H", timedelta(days=1, hours=12)),
        ("PT0.5S", timedelta(seconds=0.5)),
        ("pt1h", timedelta(hours=1)),
        (90, timedelta(seconds=90)),
        (1.5, timedelta(seconds=1.5)),
    ],
)
def test_valid_durations(text: object, expected: timedelta) -> None:
    assert WaitPolicy(timeout=text).timeout == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        "P1Y",
        "P2M",
        "P1Y2M",
        "PT0S",
        "P",
        "PT",
        "3 days",
        "",
        -5,
        0,
        0.0,
        True,
        False,
        float("nan"),
        float("inf"),
        [1],
    ],
)
def test_invalid_timeouts_name_field_and_value(bad: object) -> None:
    with pytest.raises(ValidationError) as info:
        WaitPolicy(timeout=bad)  # type: ignore[arg-type]
    text = str(info.value)
    assert "timeout" in text
    assert repr(bad) in text or str(bad) in text


def test_answer_ttl_is_validated_like_timeout() -> None:
    with pytest.raises(ValidationError, match="answer_ttl"):
        WaitPolicy(answer_ttl="P1M")


@pytest.mark.parametrize("actions", [(), ("",), ("approve", "approve")])
def test_allowed_actions_must_be_usable(actions: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError, match="allowed_actions"):
        WaitPolicy(allowed_actions=actions)


def test_defaults() -> None:
    policy = WaitPolicy()
    assert policy.allowed_actions == ("approve", "reject")
    assert policy.timeout is None
    assert policy.tags == {}
    assert policy.expires_at(datetime.now(UTC)) is None


def test_tags_are_strings_and_correlation_is_checked() -> None:
    with pytest.raises(ValidationError, match="tags"):
        WaitPolicy(tags={"group": 3})  # type: ignore[dict-item]
    with pytest.raises(ValidationError, match="correlation"):
        WaitPolicy(correlation={"provider": "jira"})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="unknown"):
        WaitPolicy.model_validate({"unknown": 1})


def test_expires_at_from_asked_at_or_publish_time() -> None:
    policy = WaitPolicy(timeout="P3D")
    published = datetime(2026, 9, 11, 9, tzinfo=UTC)
    assert policy.expires_at(published) == datetime(2026, 9, 14, 9, tzinfo=UTC)
    assert policy.expires_at(published, published - timedelta(days=1)) == datetime(
        2026, 9, 13, 9, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("duration", "text"),
    [
        (timedelta(days=3), "P3D"),
        (timedelta(minutes=15), "PT15M"),
        (timedelta(days=1, seconds=0.5), "P1DT0.5S"),
        (timedelta(hours=25), "P1DT1H"),
    ],
)
def test_format_duration_is_canonical_and_round_trips(duration: timedelta, text: str) -> None:
    assert format_duration(duration) == text
    assert parse_duration(text, "x") == duration


def test_policy_serialises_durations_as_iso() -> None:
    assert WaitPolicy(timeout=3600).model_dump(mode="json")["timeout"] == "PT1H"
    assert WaitPolicy.model_validate(
        WaitPolicy(timeout="P3D").model_dump(mode="json")
    ).timeout == timedelta(days=3)
