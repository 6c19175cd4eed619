"""What a publish reports and does: outcomes per announcer, failures, logging, signing."""

from __future__ import annotations

import copy
import logging
import pickle
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
    _plugins,
    publish,
)
from agent_wait.core._plugins import PluginRegistry

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SECRET = "s" * 40


def _now() -> datetime:
    return NOW


@pytest.fixture(autouse=True)
def no_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registry with no plugin: the workspace installs a test plugin that adjusts envelopes."""
    monkeypatch.setenv("AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setattr(_plugins, "_registry", PluginRegistry())


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


@pytest.mark.parametrize(
    ("announcer", "ok", "attempts", "message_id"),
    [
        (MemoryAnnounce(), True, None, None),
        (Receipted(), True, 2, "msg-1"),
        (Throttled(), False, 3, None),
    ],
)
def test_one_delivery_per_announcer_and_envelope(
    announcer: BaseAnnounce, ok: bool, attempts: int | None, message_id: str | None
) -> None:
    for announce in (announcer, [announcer]):
        report = publish([_question()], "t1", announce, clock=_now)
        (delivery,) = report.deliveries
        assert (delivery.announcer, delivery.question_id) == (announcer.name, "q1")
        assert delivery.event_id == report.envelopes[0].event_id
        assert (delivery.ok, delivery.attempts, delivery.message_id) == (ok, attempts, message_id)
        assert delivery.duration is not None
        assert delivery.duration >= 0


def test_a_failure_is_reported_and_strict_raises() -> None:
    broken = Broken()
    report = publish([_question()], "t1", broken)
    (failure,) = report.failures
    assert failure.error == "ConnectionError: transport down"
    assert isinstance(failure.exception, ConnectionError)
    with pytest.raises(AnnounceFailed) as info:
        publish([_question()], "t1", broken, strict=True)
    assert info.value.report.failures[0].announcer == "Broken"
    assert broken.calls == 2


def test_a_question_too_large_is_never_sent() -> None:
    broken = Broken()
    (failure,) = publish([_question("x" * (300 * 1024))], "t1", broken).deliveries
    assert isinstance(failure.exception, QuestionTooLarge)
    assert failure.duration is None
    assert broken.calls == 0
    with pytest.raises(AnnounceFailed):
        publish([_question("x" * (300 * 1024))], "t1", broken, strict=True)


def test_each_delivery_is_logged_at_info_when_enabled(caplog: pytest.LogCaptureFixture) -> None:
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


def test_publish_signs_with_the_configured_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", SECRET)
    report = publish([_question()], "t1", MemoryAnnounce(), clock=_now)
    token = (report.envelopes[0].reply_with.model_extra or {}).get("token")
    assert token is not None


def test_publish_follows_every_change_of_the_trust_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The configured trust is parsed once per setting: each change, of any of the three
    # variables, is seen by the next publish.
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
