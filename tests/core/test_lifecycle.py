"""Lifecycle events: ``wait.answered`` from the host, ``wait.expired`` from the sweeper, opt-in."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from agent_wait.core import (
    BaseAnnounce,
    JsonlAnnounce,
    LifecycleEvent,
    MemoryAnnounce,
    Outcome,
    QuestionStatus,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    StoredQuestion,
    WaitEnvelope,
)
from agent_wait.host import (
    NothingToResend,
    SweepReport,
    ahandle_message,
    answer,
    astream_message,
    handle_message,
    resend,
    stream_message,
    sweep,
)
from tests.core.test_answer import LATER, ask
from tests.core.test_host import AsyncLedger, Ledger, reply
from tests.core.test_host_stream import AsyncStreamingLedger, StreamingLedger

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema" / "lifecycle.schema.json"
T1 = datetime(2026, 9, 11, 10, 0, tzinfo=UTC)


def valid(event: LifecycleEvent) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    checker = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    checker.validate(json.loads(event.to_json()))


def sweep_due(
    tmp_path: Path, announce: Sequence[BaseAnnounce], *, thread_id: str = "t1"
) -> tuple[SweepReport, StoredQuestion]:
    """Ask one question (``due``) in a fresh inbox, sweep it past its deadline, telling ``announce``."""
    inbox = tmp_path / "inbox.sqlite3"
    ask(inbox, "due", thread_id=thread_id, timeout="PT1H", default={"action": "reject"})
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        report = sweep(store=store, entry=entry, now=LATER, announce=announce)
        [stored] = store.find("due")
    return report, stored


class EventsDown(MemoryAnnounce):
    """Takes questions, fails every event: what a transport outage does to one call."""

    name = "events-down"

    def deliver_event(self, event: LifecycleEvent) -> None:
        raise ConnectionError("transport down")


def test_an_event_keys_apart_from_its_question() -> None:
    event = LifecycleEvent.model_validate(
        {
            "type": "wait.answered",
            "event_id": "01JAV3K2R8Q9WZ7M4X1YB6N0PD",
            "thread_id": "order/4471",
            "question_id": "q1",
            "at": "2026-09-11T10:00:00+02:00",
            "by": None,
            "outcome": "resumed",
        }
    )
    assert event.dedupe_key == "wait.answered:order%2F4471:q1"
    assert event.question_dedupe_key == "wait.created:order%2F4471:q1"
    assert event.at == "2026-09-11T08:00:00Z"
    assert list(json.loads(event.to_json())) == [
        "type",
        "event_id",
        "thread_id",
        "question_id",
        "at",
        "by",
        "outcome",
    ]
    valid(event)
    with pytest.raises(ValueError, match="type"):
        LifecycleEvent.model_validate({**event.model_dump(), "type": "wait.created"})


def test_opting_in_names_the_bad_type_and_the_announcer_that_cannot(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"'wait\.closed' is not one of"):
        MemoryAnnounce().with_lifecycle_events("wait.closed")
    with JsonlAnnounce(tmp_path / "questions.jsonl") as lines:
        with pytest.raises(ValueError, match=r"'jsonl'.*does not publish lifecycle events"):
            lines.with_lifecycle_events("wait.answered")
        assert lines.lifecycle_events == frozenset()
    memory = MemoryAnnounce().with_lifecycle_events("wait.answered", "wait.expired")
    assert memory.lifecycle_events == {"wait.answered", "wait.expired"}
    assert MemoryAnnounce().lifecycle_events == frozenset()


def test_the_host_tells_only_the_announcers_that_opted_in() -> None:
    host = Ledger()
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")
    plain = MemoryAnnounce()
    handle_message(host, {"thread_id": "t"}, [told, plain])
    handled = handle_message(host, reply("t-q1"), [told, plain], clock=lambda: T1)
    assert handled.outcome is Outcome.RESUMED
    assert handled.answered == ("t-q1",)
    [event] = told.events
    assert (event.type, event.thread_id, event.question_id, event.outcome, event.at, event.by) == (
        "wait.answered",
        "t",
        "t-q1",
        "resumed",
        "2026-09-11T10:00:00Z",
        None,
    )
    valid(event)
    assert plain.events == []
    # Questions still reach both; a consumer of the plain one sees envelopes only.
    assert told.question_ids == plain.question_ids == ["t-q1", "t-q2"]
    assert all(isinstance(e, WaitEnvelope) for e in plain.envelopes)
    [delivery] = handled.events
    assert (delivery.announcer, delivery.question_id, delivery.event_id, delivery.ok) == (
        "memory",
        "t-q1",
        event.event_id,
        True,
    )


def test_no_event_unless_an_announcer_opted_in() -> None:
    host, memory = Ledger(), MemoryAnnounce()
    handle_message(host, {"thread_id": "t"}, memory)
    handled = handle_message(host, reply("t-q1"), memory)
    assert handled.outcome is Outcome.RESUMED
    assert (handled.answered, handled.events, memory.events) == (("t-q1",), (), [])


def test_an_answer_that_ran_nothing_is_not_announced() -> None:
    host = Ledger()
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")
    handle_message(host, {"thread_id": "t"}, told)
    handle_message(host, reply("t-q1"), told)
    again = handle_message(host, reply("t-q1"), told)
    unknown = handle_message(host, reply("t-q9"), told)
    refused = handle_message(host, reply("t-q2", answer="not an object"), told)
    assert [again.outcome, unknown.outcome, refused.outcome] == [
        Outcome.DUPLICATE,
        Outcome.UNKNOWN_QUESTION,
        Outcome.INVALID_ANSWER,
    ]
    assert [e.question_id for e in told.events] == ["t-q1"]
    assert again.events == unknown.events == refused.events == ()


def test_held_answers_are_announced_when_they_arrive_and_once() -> None:
    host = Ledger(together=True)
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")
    handle_message(host, {"thread_id": "t"}, told)
    held = handle_message(host, reply("t-q1"), told)
    resumed = handle_message(host, reply("t-q2"), told)
    assert (held.outcome, held.answered) == (Outcome.HELD, ("t-q1",))
    assert (resumed.outcome, resumed.answered) == (Outcome.RESUMED, ("t-q2",))
    assert [(e.question_id, e.outcome) for e in told.events] == [
        ("t-q1", "held"),
        ("t-q2", "resumed"),
    ]


def test_a_failed_event_is_reported_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    host = Ledger()
    down = EventsDown().with_lifecycle_events("wait.answered")
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")
    handle_message(host, {"thread_id": "t"}, [down, told])
    with caplog.at_level(logging.WARNING, logger="agent_wait.publish"):
        handled = handle_message(host, reply("t-q1"), [down, told], strict=True)
    assert handled.outcome is Outcome.RESUMED
    assert handled.report.ok  # the questions went out; only the event failed
    failed, delivered = handled.events
    assert (failed.announcer, failed.ok, failed.error) == (
        "events-down",
        False,
        "ConnectionError: transport down",
    )
    assert isinstance(failed.exception, ConnectionError)
    assert delivered.ok
    assert [e.question_id for e in told.events] == ["t-q1"]
    assert "lifecycle event failed: announcer=events-down type=wait.answered" in caplog.text


def test_the_async_host_tells_them_too() -> None:
    host = AsyncLedger(Ledger())
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")
    down = EventsDown().with_lifecycle_events("wait.answered")

    async def scenario() -> tuple[Outcome, list[bool]]:
        await ahandle_message(host, {"thread_id": "t"}, [told, down])
        handled = await ahandle_message(host, reply("t-q1"), [told, down])
        return handled.outcome, [d.ok for d in handled.events]

    assert asyncio.run(scenario()) == (Outcome.RESUMED, [True, False])
    assert [(e.type, e.question_id) for e in told.events] == [("wait.answered", "t-q1")]


def test_the_sweeper_announces_each_expiry(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    ask(inbox, "due", timeout="PT1H", default={"action": "reject"})
    ask(inbox, "nodefault", timeout="PT1H")
    told = MemoryAnnounce().with_lifecycle_events("wait.expired")
    answered_only = MemoryAnnounce().with_lifecycle_events("wait.answered")
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        report = sweep(store=store, entry=entry, now=LATER, announce=[told, answered_only])
        again = sweep(store=store, entry=entry, now=LATER, announce=[told])
    [event] = told.events
    assert (event.type, event.thread_id, event.question_id, event.by, event.at, event.outcome) == (
        "wait.expired",
        "t1",
        "due",
        "sweeper",
        LATER,
        "default_sent",
    )
    valid(event)
    assert event.dedupe_key == "wait.expired:t1:due"
    assert [(d.announcer, d.ok) for d in report.events] == [("memory", True)]
    assert answered_only.events == []
    assert again.events == []


def test_a_sweep_whose_event_fails_still_expires(tmp_path: Path) -> None:
    report, stored = sweep_due(tmp_path, [EventsDown().with_lifecycle_events("wait.expired")])
    assert [q.envelope.question_id for q in report.expired] == ["due"]
    assert stored.status == "expired"
    [failed] = report.events
    assert (failed.ok, failed.error) == (False, "ConnectionError: transport down")


def test_the_inbox_row_learns_that_the_host_took_its_answer(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    host = Ledger()
    with SqliteAnnounce(inbox).with_lifecycle_events("wait.answered") as table:
        handle_message(host, {"thread_id": "t"}, table, strict=True)
        handled = handle_message(host, reply("t-q1"), table, clock=lambda: T1)
        # Redelivered: nothing ran, nothing announced, the row stays as the first left it.
        handle_message(host, reply("t-q1"), table, clock=lambda: T1.replace(hour=11))
    assert [d.ok for d in handled.events] == [True]
    with SqliteQuestionStore(inbox) as store:
        [answered] = store.find("t-q1")
        [waiting] = store.find("t-q2")
        assert (answered.status, answered.answered_at, answered.answered_by, answered.answer) == (
            "answered",
            "2026-09-11T10:00:00Z",
            None,
            None,
        )
        assert waiting.is_open
        # The host has the answer; the row does not, so there is nothing to send again.
        with pytest.raises(NothingToResend, match="no answer was recorded"):
            resend("t-q1", store=store)


def test_an_event_never_reopens_rewrites_or_inserts_a_row(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    ask(inbox, "q1")

    def expired(question_id: str) -> LifecycleEvent:
        return LifecycleEvent.model_validate(
            {
                "type": "wait.expired",
                "event_id": "01JAV9Q4M2T7XK3N8B5RZC1WDE",
                "thread_id": "t1",
                "question_id": question_id,
                "at": LATER,
                "by": "sweeper",
                "outcome": "default_sent",
            }
        )

    with (
        SqliteAnnounce(inbox).with_lifecycle_events("wait.expired") as table,
        SqliteQuestionStore(inbox) as store,
        SqliteEntry(inbox) as entry,
    ):
        answer("q1", "approve", by="alice", store=store, entry=entry, at=T1)
        table.deliver_event(expired("q1"))
        table.deliver_event(expired("never-asked"))
        [stored] = store.find("q1")
        assert store.find("never-asked") == []
    assert (stored.status, stored.answered_by, stored.answered_at, stored.answer) == (
        "answered",
        "alice",
        "2026-09-11T10:00:00Z",
        {"action": "approve"},
    )


def test_a_streamed_answer_is_announced_like_a_handled_one() -> None:
    host = StreamingLedger()
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")
    list(stream_message(host, {"thread_id": "t"}, told))
    run = stream_message(host, reply("t-q1"), told)
    assert list(run) == [{"step": "resuming"}]
    assert run.handled.answered == ("t-q1",)
    assert [d.ok for d in run.handled.events] == [True]
    assert [(e.type, e.question_id, e.outcome) for e in told.events] == [
        ("wait.answered", "t-q1", "resumed")
    ]


def test_an_async_streamed_answer_is_announced_too() -> None:
    host = AsyncStreamingLedger(StreamingLedger())
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")

    async def scenario() -> tuple[str, ...]:
        start = astream_message(host, {"thread_id": "t"}, told)  # pyright: ignore[reportArgumentType]
        _ = [e async for e in start]
        run = astream_message(host, reply("t-q1"), told)  # pyright: ignore[reportArgumentType]
        _ = [e async for e in run]
        return run.handled.answered

    assert asyncio.run(scenario()) == ("t-q1",)
    assert [e.question_id for e in told.events] == ["t-q1"]


def test_wait_answered_names_who_the_answer_message_says_answered() -> None:
    named, plain = Ledger(), Ledger()
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")
    quiet = MemoryAnnounce().with_lifecycle_events("wait.answered")
    handle_message(named, {"thread_id": "t"}, told)
    handle_message(plain, {"thread_id": "t"}, quiet)
    handled = handle_message(named, {**reply("t-q1"), "answered_by": "alice"}, told)
    without = handle_message(plain, reply("t-q1"), quiet)
    [event] = told.events
    assert (event.question_id, event.outcome, event.by) == ("t-q1", "resumed", "alice")
    valid(event)
    [absent] = quiet.events
    assert absent.by is None
    # The field changes nothing else: the same run, the same answer, the same questions next.
    assert (handled.outcome, named.runs, named.threads["t"].answers) == (
        without.outcome,
        plain.runs,
        plain.threads["t"].answers,
    )
    assert told.question_ids == quiet.question_ids


def test_every_answer_of_a_message_and_a_held_one_carry_its_answered_by() -> None:
    host = Ledger(3, together=True)
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")
    handle_message(host, {"thread_id": "t"}, told)
    held = handle_message(host, {**reply("t-q1"), "answered_by": "alice"}, told)
    resumed = handle_message(
        host,
        {
            **reply("t-q2"),
            "answered_by": "bob",
            "more_answers": [{"question_id": "t-q3", "answer": {"action": "approve"}}],
        },
        told,
    )
    assert (held.outcome, resumed.outcome) == (Outcome.HELD, Outcome.RESUMED)
    assert [(e.question_id, e.outcome, e.by) for e in told.events] == [
        ("t-q1", "held", "alice"),
        ("t-q2", "resumed", "bob"),
        ("t-q3", "resumed", "bob"),
    ]


def test_answer_and_resend_send_the_approver_the_host_names_in_its_event(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    host = Ledger()
    told = MemoryAnnounce().with_lifecycle_events("wait.answered")
    with SqliteAnnounce(inbox) as table:
        handle_message(host, {"thread_id": "t"}, [table, told], strict=True)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        answer("t-q1", "approve", by="alice", store=store, entry=entry, at=T1)
        again = resend("t-q1", store=store, entry=entry)
        [received] = entry.receive(1)
    assert received.message["answered_by"] == again["answered_by"] == "alice"
    handle_message(host, received.message, told)
    assert [(e.question_id, e.by) for e in told.events] == [("t-q1", "alice")]


def test_the_inbox_row_learns_who_answered_from_the_event(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    host = Ledger()
    with SqliteAnnounce(inbox).with_lifecycle_events("wait.answered") as table:
        handle_message(host, {"thread_id": "t"}, table, strict=True)
        handle_message(host, {**reply("t-q1"), "answered_by": "alice"}, table, clock=lambda: T1)
    with SqliteQuestionStore(inbox) as store:
        [answered] = store.find("t-q1")
    assert (answered.status, answered.answered_at, answered.answered_by) == (
        "answered",
        "2026-09-11T10:00:00Z",
        "alice",
    )


def test_a_recorded_name_no_message_can_carry_is_left_out_of_a_resend(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    ask(inbox, "q1")
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        # Recorded before answer messages named the approver, when any name was kept.
        store.transition("t1", "q1", QuestionStatus.ANSWERED, by="x" * 80, answer={"a": 1})
        message = resend("q1", store=store, entry=entry)
    assert message == {"thread_id": "t1", "question_id": "q1", "answer": {"a": 1}}


@pytest.mark.parametrize(
    ("by", "error"),
    [
        ("a" * 65, "by: at most 64 characters, got 65"),
        ("alice\r\nbob", r"by: control characters are not allowed, got 'alice\r\nbob'"),
        ("  ", "by: expected a name such as 'alice', got '  '"),
    ],
)
def test_a_name_no_answer_message_can_carry_is_refused_before_anything_is_recorded(
    tmp_path: Path, by: str, error: str
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    ask(inbox, "q1", timeout="PT1H", default={"action": "reject"})
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        with pytest.raises(ValueError, match=re.escape(error)):
            answer("q1", "approve", by=by, store=store, entry=entry)
        with pytest.raises(ValueError, match=re.escape(error)):
            sweep(store=store, entry=entry, now=LATER, by=by, announce=())
        [stored] = store.find("q1")
        assert stored.is_open
        assert entry.receive(1) == []
