"""publish/apublish: one envelope per question to every announcer, failures contained and reported."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence

import pytest

from agent_wait.core import (
    AnnounceFailed,
    BaseAnnounce,
    DeliveryFailed,
    DeliveryOutcome,
    MemoryAnnounce,
    Question,
    QuestionNotSendable,
    QuestionTooLarge,
    Receipt,
    WaitEnvelope,
    WaitPolicy,
    apublish,
    publish,
)


class Broken(BaseAnnounce):
    def deliver(self, envelope: WaitEnvelope) -> None:
        raise ConnectionError("transport down")


class Batching(BaseAnnounce):
    """Fails every second envelope of a batch, like a partial batch failure."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def deliver(self, envelope: WaitEnvelope) -> None:
        self.calls.append(1)

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        self.calls.append(len(envelopes))
        return [None if i % 2 == 0 else ValueError("entry rejected") for i in range(len(envelopes))]


class Slow(BaseAnnounce):
    def __init__(self, started: list[str], gate: asyncio.Event, label: str) -> None:
        self.started, self.gate, self.label = started, gate, label

    async def adeliver(self, envelope: WaitEnvelope) -> None:
        self.started.append(self.label)
        if len(self.started) == 2:
            self.gate.set()
        # Both announcers must be in flight at once for the gate to open.
        await asyncio.wait_for(self.gate.wait(), timeout=5)


def questions(n: int = 2) -> list[Question]:
    return [
        Question(question_id=f"q{i}", question={"n": i}, policy=WaitPolicy(tags={"g": "x"}))
        for i in range(n)
    ]


def test_every_question_reaches_every_announcer() -> None:
    first, second = MemoryAnnounce(), MemoryAnnounce()
    report = publish(questions(3), "t1", [first, second])
    assert report.ok
    assert first.question_ids == second.question_ids == ["q0", "q1", "q2"]
    assert len(report.deliveries) == 6
    assert report.question_ids == ["q0", "q1", "q2"]


def test_no_questions_publishes_nothing() -> None:
    memory = MemoryAnnounce()
    report = publish([], "t1", memory)
    assert report.ok
    assert report.envelopes == ()
    assert memory.envelopes == []


def test_a_failing_announcer_never_raises_and_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    memory = MemoryAnnounce()
    with caplog.at_level(logging.INFO, logger="agent_wait"):
        report = publish(questions(2), "t1", [Broken(), memory])
    assert not report.ok
    assert memory.question_ids == ["q0", "q1"]
    failures = report.failures
    assert [(f.announcer, f.question_id) for f in failures] == [("Broken", "q0"), ("Broken", "q1")]
    assert failures[0].error == "ConnectionError: transport down"
    assert isinstance(failures[0].exception, ConnectionError)
    assert "delivery failed" in caplog.text


def test_strict_raises_after_trying_everyone() -> None:
    memory = MemoryAnnounce()
    with pytest.raises(AnnounceFailed) as info:
        publish(questions(1), "t1", [Broken(), memory], strict=True)
    assert memory.question_ids == ["q0"]
    assert info.value.report.failures[0].announcer == "Broken"
    assert "transport down" in str(info.value)


def test_batches_go_through_deliver_many_with_per_entry_outcomes() -> None:
    batching = Batching()
    report = publish(questions(4), "t1", batching)
    assert batching.calls == [4]
    assert [d.ok for d in report.deliveries] == [True, False, True, False]


def test_wrong_outcome_count_is_a_failure_not_a_crash() -> None:
    class Liar(BaseAnnounce):
        def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
            return [None]

    report = publish(questions(3), "t1", Liar())
    assert not report.ok
    assert all("3 envelopes" in (d.error or "") for d in report.deliveries)


async def test_apublish_fans_out_concurrently() -> None:
    started: list[str] = []
    gate = asyncio.Event()
    report = await apublish(
        questions(1), "t1", [Slow(started, gate, "a"), Slow(started, gate, "b")]
    )
    assert report.ok
    assert sorted(started) == ["a", "b"]


async def test_apublish_uses_a_sync_batching_announcer_off_the_loop() -> None:
    batching = Batching()
    report = await apublish(questions(2), "t1", [batching, Broken()])
    assert batching.calls == [2]
    assert [d.ok for d in report.for_announcer("Batching")] == [True, False]
    assert not any(d.ok for d in report.for_announcer("Broken"))


async def test_apublish_strict() -> None:
    with pytest.raises(AnnounceFailed):
        await apublish(questions(1), "t1", Broken(), strict=True)


NOWHERE = "no announcer: 2 question(s) ['q0', 'q1'] were delivered nowhere"


def test_strict_publish_to_no_announcer_raises() -> None:
    with pytest.raises(AnnounceFailed, match=re.escape(NOWHERE)) as info:
        publish(questions(2), "t1", [], strict=True)
    assert info.value.report.question_ids == ["q0", "q1"]
    assert info.value.report.deliveries == ()


def test_publish_to_no_announcer_warns_and_is_not_ok(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_wait"):
        report = publish(questions(2), "t1", [])
    assert not report.ok
    assert report.failures == []
    with pytest.raises(AnnounceFailed, match=re.escape(NOWHERE)):
        report.raise_for_failures()
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert "no announcer" in record.getMessage()
    assert "['q0', 'q1']" in record.getMessage()


async def test_apublish_to_no_announcer_warns_or_raises(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_wait"):
        report = await apublish(questions(2), "t1", [])
    assert not report.ok
    assert "no announcer" in caplog.text
    with pytest.raises(AnnounceFailed, match=re.escape(NOWHERE)):
        await apublish(questions(2), "t1", [], strict=True)


def test_no_questions_to_no_announcer_is_fine(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_wait"):
        assert publish([], "t1", [], strict=True).ok
    assert caplog.records == []


def test_oversize_question_is_reported_for_that_envelope_only() -> None:
    memory = MemoryAnnounce()
    big = Question(question_id="big", question="x" * (300 * 1024))
    report = publish([big, *questions(1)], "t1", memory)
    assert memory.question_ids == ["q0"]
    (failure,) = report.failures
    assert failure.question_id == "big"
    assert isinstance(failure.exception, QuestionTooLarge)
    assert "reference" in (failure.error or "")


def test_a_lone_surrogate_is_a_reported_failure_of_that_question_only() -> None:
    memory = MemoryAnnounce()
    broken = Question(question_id="broken", question={"notes": {"first": "ab\udfffc"}})
    report = publish([broken, *questions(1)], "t1", memory)
    assert memory.question_ids == ["q0"]
    (failure,) = report.failures
    assert failure.question_id == "broken"
    assert isinstance(failure.exception, QuestionNotSendable)
    assert failure.exception.field == "question.notes.first"
    assert "'\\udfff' at position 2" in (failure.error or "")
    assert failure.duration is None  # nothing was sent

    (alone,) = publish([broken], "t1", memory).failures  # the one-question path
    assert isinstance(alone.exception, QuestionNotSendable)
    (awaited,) = asyncio.run(apublish([broken], "t1", memory)).failures
    assert isinstance(awaited.exception, QuestionNotSendable)
    with pytest.raises(AnnounceFailed, match="QuestionNotSendable"):
        publish([broken], "t1", memory, strict=True)
    assert memory.question_ids == ["q0"]


def test_named_announcer_and_reply_to() -> None:
    report = publish(questions(1), "t1", "memory", reply_to={"url": "https://answers"})
    assert report.ok
    assert report.envelopes[0].reply_to == {"url": "https://answers"}


def test_bad_thread_id_and_announce_are_named() -> None:
    with pytest.raises(ValueError, match="thread_id"):
        publish(questions(1), "", MemoryAnnounce())
    with pytest.raises(TypeError, match=r"announce\[0\]"):
        publish(questions(1), "t", [object()])  # type: ignore[list-item]


def test_logs_carry_ids_never_question_content(caplog: pytest.LogCaptureFixture) -> None:
    secret_question = Question(question_id="q-secret", question={"ssn": "123-45-6789"})
    with caplog.at_level(logging.DEBUG, logger="agent_wait"):
        publish([secret_question], "t1", [MemoryAnnounce(), Broken()])
    assert "q-secret" in caplog.text
    assert "123-45-6789" not in caplog.text


class Receipted(BaseAnnounce):
    """Takes 10 ms per call and says what the transport said: an id and the attempts."""

    def __init__(self) -> None:
        self.sent = 0

    def deliver(self, envelope: WaitEnvelope) -> Receipt:
        time.sleep(0.01)
        self.sent += 1
        return Receipt(f"msg-{self.sent}", 2)

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        time.sleep(0.01)
        return [
            Receipt("msg-batch-0", 1),
            DeliveryFailed("throttled", retryable=True, code="ThrottlingException", attempts=3),
        ]


def test_deliveries_carry_duration_attempts_and_message_id() -> None:
    sink = Receipted()
    one = publish(questions(1), "t1", [sink, MemoryAnnounce()])
    receipted, memory = one.deliveries
    assert (receipted.message_id, receipted.attempts) == ("msg-1", 2)
    assert receipted.duration is not None
    assert receipted.duration >= 0.01
    assert (memory.message_id, memory.attempts) == (None, None)
    assert memory.duration is not None
    assert memory.duration >= 0

    batch = publish(questions(2), "t1", sink)
    ok, failed = batch.deliveries
    assert (ok.ok, ok.message_id, ok.attempts) == (True, "msg-batch-0", 1)
    assert (failed.ok, failed.message_id, failed.attempts) == (False, None, 3)
    assert isinstance(failed.exception, DeliveryFailed)
    assert failed.exception.retryable
    assert failed.exception.code == "ThrottlingException"
    # The envelopes of one batch share the duration of the call that carried them.
    assert ok.duration == failed.duration
    assert ok.duration is not None
    assert ok.duration >= 0.01


async def test_async_deliveries_carry_receipts() -> None:
    report = await apublish(questions(1), "t1", Receipted())
    (delivery,) = report.deliveries
    assert (delivery.message_id, delivery.attempts) == ("msg-1", 2)
    assert delivery.duration is not None
    assert delivery.duration >= 0.01


def test_a_question_too_large_has_no_duration() -> None:
    big = Question(question_id="big", question="x" * (300 * 1024))
    (failure,) = publish([big], "t1", MemoryAnnounce()).deliveries
    assert isinstance(failure.exception, QuestionTooLarge)
    assert failure.duration is None


class BatchFirst(BaseAnnounce):
    """Writes only deliver_many / adeliver_many: a refusal of every envelope named 'q1'."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def _outcomes(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        self.batches.append([e.question_id for e in envelopes])
        return [
            DeliveryFailed(f"refused {e.question_id}", retryable=False)
            if e.question_id == "q1"
            else Receipt(f"m-{e.question_id}", 1)
            for e in envelopes
        ]

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        return self._outcomes(envelopes)

    async def adeliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        return self._outcomes(envelopes)


def _envelope(question_id: str) -> WaitEnvelope:
    report = publish([Question(question_id=question_id, question="ok?")], "t-1", MemoryAnnounce())
    return report.envelopes[0]


def test_a_batch_first_announcer_delivers_one_as_a_batch_of_one() -> None:
    announce = BatchFirst()
    assert announce.deliver(_envelope("q0")) == Receipt("m-q0", 1)
    with pytest.raises(DeliveryFailed, match="refused q1"):
        announce.deliver(_envelope("q1"))
    assert announce.batches == [["q0"], ["q1"]]


async def test_a_batch_first_announcer_adelivers_through_adeliver_many() -> None:
    announce = BatchFirst()
    assert await announce.adeliver(_envelope("q0")) == Receipt("m-q0", 1)
    with pytest.raises(DeliveryFailed, match="refused q1"):
        await announce.adeliver(_envelope("q1"))
    assert announce.batches == [["q0"], ["q1"]]


def test_an_announcer_with_neither_deliver_nor_deliver_many_says_so() -> None:
    class Empty(BaseAnnounce):
        pass

    with pytest.raises(
        NotImplementedError, match=r"Empty must implement deliver\(\) or deliver_many\(\)"
    ):
        Empty().deliver(_envelope("q0"))
    report = publish([Question(question_id="q0", question="ok?")], "t-1", Empty())
    assert isinstance(report.failures[0].exception, NotImplementedError)
