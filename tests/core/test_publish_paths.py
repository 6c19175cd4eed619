"""One question to one announcer with no publish hook takes a shorter path: same report, same effects.

The workspace installs a test plugin that implements publish hooks, so these tests publish
through a registry of their own with no plugin, where that path is taken.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import pickle
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_wait.core import (
    AnnounceFailed,
    BaseAnnounce,
    Delivery,
    DeliveryFailed,
    MemoryAnnounce,
    PublishReport,
    Question,
    QuestionTooLarge,
    Receipt,
    WaitEnvelope,
    WaitPolicy,
    _publish,
    publish,
)
from agent_wait.core._announce import delivered_report, new_delivery
from agent_wait.core._plugins import PluginRegistry

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SECRET = "s" * 40


def _now() -> datetime:
    return NOW


@pytest.fixture(autouse=True)
def prepared(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """No plugin hooks; counts the publishes that went the general way (through ``_prepare``)."""
    plugins = PluginRegistry()
    plugins.load([])
    monkeypatch.setattr(_publish, "_manager", plugins.manager)
    calls: list[int] = []
    original = _publish._prepare  # pyright: ignore[reportPrivateUsage]

    def counting(*args: Any) -> Any:
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(_publish, "_prepare", counting)
    return calls


class Broken(BaseAnnounce):
    def __init__(self) -> None:
        self.calls = 0

    def deliver(self, envelope: WaitEnvelope) -> None:
        self.calls += 1
        raise ConnectionError("transport down")


class Throttled(BaseAnnounce):
    def deliver(self, envelope: WaitEnvelope) -> None:
        raise DeliveryFailed("throttled", retryable=True, code="Throttling", attempts=3)


class Receipted(BaseAnnounce):
    def deliver(self, envelope: WaitEnvelope) -> Receipt:
        return Receipt("msg-1", 2)


def _question(text: str = "Refund 1,200 EUR?") -> Question:
    return Question(
        question_id="q1",
        question={"ask": text},
        policy=WaitPolicy(timeout="P1D", tags={"team": "finance"}),
    )


def _comparable(report: PublishReport) -> tuple[Any, ...]:
    # Everything but what differs by design between two publishes: the event id, the time taken.
    envelopes = [e.model_dump(exclude={"event_id"}) for e in report.envelopes]
    deliveries = [
        (
            d.announcer,
            d.question_id,
            d.ok,
            d.error,
            type(d.exception),
            d.duration is None,
            d.attempts,
            d.message_id,
        )
        for d in report.deliveries
    ]
    return envelopes, deliveries


ANNOUNCERS: dict[str, Callable[[], BaseAnnounce]] = {
    "memory": MemoryAnnounce,
    "receipt": Receipted,
    "failure": Broken,
    "transport failure": Throttled,
}


@pytest.mark.parametrize("kind", list(ANNOUNCERS))
def test_one_question_to_one_announcer_reports_what_the_general_path_reports(
    kind: str, prepared: list[int]
) -> None:
    make = ANNOUNCERS[kind]
    short = publish([_question()], "t1", make(), clock=_now)
    assert prepared == [], "one question to one announcer with no hook takes the short path"
    general = publish([_question()], "t1", [make()], clock=_now)
    assert prepared == [1]
    assert _comparable(short) == _comparable(general)
    (delivery,) = short.deliveries
    assert delivery.event_id == short.envelopes[0].event_id
    assert delivery.duration is not None
    assert delivery.duration >= 0


def test_a_failure_on_the_short_path_is_reported_and_strict_raises(prepared: list[int]) -> None:
    broken = Broken()
    report = publish([_question()], "t1", broken)
    (failure,) = report.failures
    assert failure.error == "ConnectionError: transport down"
    assert isinstance(failure.exception, ConnectionError)
    with pytest.raises(AnnounceFailed) as info:
        publish([_question()], "t1", broken, strict=True)
    assert info.value.report.failures[0].announcer == "Broken"
    assert broken.calls == 2
    assert prepared == []


def test_a_question_too_large_on_the_short_path_is_never_sent(prepared: list[int]) -> None:
    broken = Broken()
    (failure,) = publish([_question("x" * (300 * 1024))], "t1", broken).deliveries
    assert isinstance(failure.exception, QuestionTooLarge)
    assert failure.duration is None
    assert broken.calls == 0
    with pytest.raises(AnnounceFailed):
        publish([_question("x" * (300 * 1024))], "t1", broken, strict=True)
    assert prepared == []


def test_the_short_path_logs_each_delivery_at_info_when_enabled(
    caplog: pytest.LogCaptureFixture, prepared: list[int]
) -> None:
    with caplog.at_level(logging.INFO, logger="agent_wait.publish"):
        report = publish([_question()], "t1", MemoryAnnounce())
    (record,) = [r for r in caplog.records if r.name == "agent_wait.publish"]
    assert record.levelno == logging.INFO
    assert record.agent_wait == {  # pyright: ignore[reportAttributeAccessIssue]
        "announcer": "memory",
        "thread_id": "t1",
        "question_id": "q1",
        "event_id": report.envelopes[0].event_id,
        "ok": True,
    }
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agent_wait.publish"):
        publish([_question()], "t1", MemoryAnnounce())
    assert caplog.records == []
    assert prepared == []


def test_the_short_path_signs_with_the_configured_secrets(
    monkeypatch: pytest.MonkeyPatch, prepared: list[int]
) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", SECRET)
    short = publish([_question()], "t1", MemoryAnnounce(), clock=_now)
    general = publish([_question()], "t1", [MemoryAnnounce()], clock=_now)
    token = (short.envelopes[0].reply_with.model_extra or {}).get("token")
    assert token is not None
    assert _comparable(short) == _comparable(general)
    assert prepared == [1]


def test_the_short_path_follows_every_change_of_the_trust_environment(
    monkeypatch: pytest.MonkeyPatch, prepared: list[int]
) -> None:
    # The configured trust is cached between publishes, keyed on the raw values: each change,
    # of any of the three variables, is seen by the next publish.
    def extras() -> dict[str, Any]:
        report = publish([_question()], "t1", MemoryAnnounce(), clock=_now)
        return report.envelopes[0].reply_with.model_extra or {}

    for name in ("SECRETS", "EXPIRED", "STRICT_ACTIONS"):
        monkeypatch.delenv(f"AGENT_WAIT_ANSWER_{name}", raising=False)
    assert extras() == {}
    monkeypatch.setenv("AGENT_WAIT_ANSWER_EXPIRED", "refuse")
    assert set(extras()) == {"expires_at"}
    monkeypatch.setenv("AGENT_WAIT_ANSWER_EXPIRED", "refuse")  # the same value again
    assert set(extras()) == {"expires_at"}
    monkeypatch.setenv("AGENT_WAIT_ANSWER_EXPIRED", "accept")
    assert extras() == {}
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", SECRET)
    assert set(extras()) == {"expires_at", "token"}
    monkeypatch.setenv("AGENT_WAIT_ANSWER_STRICT_ACTIONS", "maybe")
    with pytest.raises(ValueError, match="AGENT_WAIT_ANSWER_STRICT_ACTIONS"):
        extras()
    monkeypatch.delenv("AGENT_WAIT_ANSWER_STRICT_ACTIONS")
    monkeypatch.delenv("AGENT_WAIT_ANSWER_SECRETS")
    assert extras() == {}
    assert prepared == []


def test_reply_to_and_several_questions_take_the_general_path(prepared: list[int]) -> None:
    publish([_question()], "t1", MemoryAnnounce(), reply_to={"url": "https://answers"})
    publish([_question(), _question()], "t1", MemoryAnnounce())
    publish((_question(),), "t1", MemoryAnnounce())
    assert prepared == [1, 1, 1]


def test_deliveries_built_for_publish_are_those_of_the_constructor() -> None:
    error = ConnectionError("transport down")
    for args in (
        ("memory", "q1", "e1", True, None, None, 0.5),
        ("sqs", "q1", "e1", True, None, None, 0.5, 2, "msg-1"),
        ("sqs", "q1", "e1", False, "ConnectionError: transport down", error, None, 3),
    ):
        built, constructed = new_delivery(*args), Delivery(*args)
        assert type(built) is Delivery
        assert built == constructed
        assert hash(built) == hash(constructed)
        assert repr(built) == repr(constructed)
        for field in dataclasses.fields(Delivery):
            assert getattr(built, field.name) is getattr(constructed, field.name)
        assert pickle.loads(pickle.dumps(built)) == constructed
        assert copy.copy(built) == constructed
        with pytest.raises(dataclasses.FrozenInstanceError):
            built.ok = False  # pyright: ignore[reportAttributeAccessIssue]


def test_a_report_is_immutable_and_compares_hashes_copies_and_pickles_by_its_attributes() -> None:
    delivery = Delivery("memory", "q1", "e1", True)
    report = PublishReport((), (delivery,))
    assert report == PublishReport((), (delivery,))
    assert report != PublishReport((), ())
    assert report != ((), (delivery,))
    assert hash(report) == hash(PublishReport((), (delivery,)))
    assert repr(report) == f"PublishReport(envelopes=(), deliveries=({delivery!r},))"
    assert pickle.loads(pickle.dumps(report)) == report
    assert copy.copy(report) == report
    match report:
        case PublishReport(envelopes, deliveries):
            assert (envelopes, deliveries) == ((), (delivery,))
    with pytest.raises(AttributeError):
        report.deliveries = ()  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(AttributeError):
        report.extra = 1  # pyright: ignore[reportAttributeAccessIssue]
    assert PublishReport() == PublishReport((), ())


def test_the_usual_report_builds_its_delivery_when_read_and_equals_the_constructed_one() -> None:
    envelope = publish([_question()], "t1", MemoryAnnounce()).envelopes[0]
    expected = PublishReport(
        (envelope,), (Delivery("memory", "q1", envelope.event_id, True, None, None, 0.5),)
    )
    unread = delivered_report(envelope, "memory", 0.5)
    assert type(unread) is PublishReport
    assert (unread.ok, unread.failures, unread.question_ids) == (True, [], ["q1"])
    unread.raise_for_failures()
    assert unread._deliveries is None  # pyright: ignore[reportPrivateUsage]
    first_reads: list[Callable[[PublishReport], object]] = [
        lambda report: report.deliveries,
        lambda report: report == expected,
        repr,
        copy.copy,
        pickle.dumps,
        lambda report: report.for_announcer("memory"),
    ]
    for first_read in first_reads:
        built = delivered_report(envelope, "memory", 0.5)
        first_read(built)
        assert type(built.deliveries[0]) is Delivery
        assert built.deliveries is built.deliveries
        assert built == expected
        assert repr(built) == repr(expected)
        assert hash(built.deliveries) == hash(expected.deliveries)
        assert pickle.loads(pickle.dumps(built)) == expected
        assert built.for_announcer("memory") == list(expected.deliveries)
        assert built.for_announcer("sqs") == []
