"""Reminders, escalation and the last warning: the policy, the envelope and the sweeper."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import jsonschema
import pytest
from pydantic import ValidationError

from agent_wait.core import (
    DeliveryFailed,
    LifecycleEvent,
    MemoryAnnounce,
    Question,
    QuestionStatus,
    QuestionStore,
    Receipt,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    StoredQuestion,
    Transition,
    WaitPolicy,
    announcer,
    publish,
)
from agent_wait.host import sweep
from agent_wait.host._cli import main

T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema"
FOLLOW_UPS = ("wait.reminder", "wait.escalated", "wait.last_warning")
POLICY: dict[str, Any] = {
    "timeout": "PT8H",
    "default": {"action": "reject"},
    "remind": ["PT1H", "PT3H"],
    "escalate": {"after": "PT4H", "to": {"approver_group": "finance-leads"}},
    "last_warning": "PT30M",
}


def ask(path: Path, question_id: str = "q1", **policy: Any) -> None:
    publish(
        [Question(question_id=question_id, question={"n": 1}, policy=WaitPolicy(**policy))],
        "t1",
        SqliteAnnounce(path),
        strict=True,
        clock=lambda: T0,
    )


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    return tmp_path / "inbox.sqlite3"


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"remind": ["PT2H", "PT1H"]}, "remind: ['PT2H', 'PT1H'] must increase"),
        ({"remind": ["PT1H", "soon"]}, "remind[1]: 'soon' is not an ISO 8601 duration"),
        ({"remind": [0]}, "remind[0]: duration must be positive, got 0"),
        ({"timeout": "PT1H", "remind": ["PT1H"]}, "remind: 'PT1H' is not before the timeout"),
        ({"escalate": {"after": "PT1H"}}, "escalate.to\n  Field required"),
        ({"escalate": {"after": "PT1H", "to": {}}}, "escalate.to: expected the tags"),
        ({"escalate": {"after": "PT1H", "to": {"group": " "}}}, "escalate.to: 'group': ' '"),
        ({"escalate": {"after": "later", "to": {"g": "x"}}}, "after: 'later' is not an ISO"),
        (
            {"escalate": {"after": "PT1H", "to": {"g": "x"}, "cc": "y"}},
            "escalate.cc\n  Extra inputs are not permitted",
        ),
        (
            {"timeout": "PT2H", "escalate": {"after": "PT2H", "to": {"g": "x"}}},
            "escalate.after: 'PT2H' is not before the timeout 'PT2H'",
        ),
        ({"last_warning": "PT5M"}, "last_warning: 'PT5M' is measured back from the deadline"),
        ({"timeout": "PT5M", "last_warning": "PT5M"}, "last_warning: 'PT5M' before the deadline"),
    ],
)
def test_a_bad_follow_up_is_refused_naming_the_field_and_the_value(
    policy: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        WaitPolicy(**policy)
    assert message in str(refused.value)


def test_the_envelope_says_when_each_follow_up_is_due(inbox: Path) -> None:
    ask(inbox, **POLICY)
    ask(inbox, "plain", timeout="PT8H")
    with SqliteQuestionStore(inbox) as store:
        [followed] = store.find("q1")
        [plain] = store.find("plain")
    data = json.loads(followed.envelope.to_json())
    assert data["follow_up"] == {
        "remind_at": ["2026-09-11T10:00:00Z", "2026-09-11T12:00:00Z"],
        "escalate_at": "2026-09-11T13:00:00Z",
        "escalate_to": {"approver_group": "finance-leads"},
        "last_warning_at": "2026-09-11T16:30:00Z",
    }
    checker = jsonschema.Draft202012Validator(
        json.loads((SCHEMA / "envelope.schema.json").read_text(encoding="utf-8")),
        format_checker=jsonschema.FormatChecker(),
    )
    checker.validate(data)
    # A question that asks for no follow-up carries exactly the fields it carried before.
    assert "follow_up" not in json.loads(plain.envelope.to_json())
    assert WaitPolicy(**POLICY).model_dump(mode="json")["remind"] == ["PT1H", "PT3H"]


def test_the_sweeper_follows_up_each_step_once_and_publishes_it(inbox: Path) -> None:
    ask(inbox, **POLICY)
    heard = MemoryAnnounce().with_lifecycle_events(*FOLLOW_UPS)
    seen: list[list[str]] = []
    with SqliteQuestionStore(inbox) as store:
        for hours in (0.5, 1, 1.25, 3, 4, 7.5, 7.6):
            report = sweep(store=store, now=at(hours), announce=[heard])
            seen.append([e.type for e in heard.events])
            assert report.expired == []
            assert report.failed == []
        [question] = store.find("q1")
    assert seen == [
        [],
        ["wait.reminder"],
        ["wait.reminder"],
        ["wait.reminder"] * 2,
        ["wait.reminder"] * 2 + ["wait.escalated"],
        ["wait.reminder"] * 2 + ["wait.escalated", "wait.last_warning"],
        ["wait.reminder"] * 2 + ["wait.escalated", "wait.last_warning"],
    ]
    first, second, escalated, warning = heard.events
    assert (first.reminder, second.reminder) == (1, 2)
    assert first.dedupe_key == "wait.reminder:t1:q1:1" != second.dedupe_key
    assert escalated.escalated_to == {"approver_group": "finance-leads"}
    assert escalated.dedupe_key == "wait.escalated:t1:q1"
    assert {e.by for e in heard.events} == {"sweeper"}
    assert [e.outcome for e in heard.events] == ["reminded", "reminded", "escalated", "warned"]
    assert warning.at == "2026-09-11T16:30:00Z"
    assert warning.envelope is not None
    assert warning.envelope.expires_at == "2026-09-11T17:00:00Z"
    lifecycle = json.loads((SCHEMA / "lifecycle.schema.json").read_text(encoding="utf-8"))
    for event in heard.events:
        jsonschema.Draft202012Validator(
            lifecycle, format_checker=jsonschema.FormatChecker()
        ).validate(json.loads(event.to_json()))
        assert LifecycleEvent.model_validate_json(event.to_json()) == event
    assert question.is_open
    assert question.escalated_to == {"approver_group": "finance-leads"}
    assert dict(question.follow_ups) == {
        "reminder:1": "2026-09-11T10:00:00Z",
        "reminder:2": "2026-09-11T12:00:00Z",
        "escalated": "2026-09-11T13:00:00Z",
        "last_warning": "2026-09-11T16:30:00Z",
    }


def test_before_the_escalation_nobody_else_is_named(inbox: Path) -> None:
    ask(inbox, **POLICY)
    with SqliteQuestionStore(inbox) as store:
        sweep(store=store, now=at(1), announce=())
        [question] = store.find("q1")
    assert question.escalated_to is None
    assert list(question.follow_ups) == ["reminder:1"]


def test_of_reminders_due_together_only_the_latest_is_sent(inbox: Path) -> None:
    ask(inbox, **POLICY)
    heard = MemoryAnnounce().with_lifecycle_events("wait.reminder")
    with SqliteQuestionStore(inbox) as store:
        report = sweep(store=store, now=at(3.5), announce=[heard])
        again = sweep(store=store, now=at(3.6), announce=[heard])
        [question] = store.find("q1")
    assert [(e.type, e.reminder) for e in heard.events] == [("wait.reminder", 2)]
    assert [q.envelope.question_id for q in report.reminded] == ["q1"]
    assert again.reminded == []
    assert set(question.follow_ups) == {"reminder:1", "reminder:2"}


def test_answered_and_expired_questions_are_not_followed_up(inbox: Path) -> None:
    ask(inbox, "answered", **POLICY)
    ask(inbox, "late", **POLICY)
    heard = MemoryAnnounce().with_lifecycle_events(*FOLLOW_UPS, "wait.expired")
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        store.transition("t1", "answered", QuestionStatus.ANSWERED, by="alice", answer="approve")
        # Nobody swept for nine hours: the default decides, with no late reminder first.
        report = sweep(store=store, entry=entry, now=at(9), announce=[heard])
    assert [(e.type, e.question_id) for e in heard.events] == [("wait.expired", "late")]
    assert report.reminded == report.escalated == report.warned == []


def test_only_announcers_that_opted_in_to_a_follow_up_hear_it(inbox: Path) -> None:
    ask(inbox, **POLICY)
    closing = cast("MemoryAnnounce", announcer("memory", lifecycle_events=True))
    reminders = cast("MemoryAnnounce", announcer("memory", lifecycle_events=["wait.reminder"]))
    escalations = cast(
        "MemoryAnnounce", announcer("memory", lifecycle_events=["wait.escalated", "wait.expired"])
    )
    with SqliteQuestionStore(inbox) as store:
        report = sweep(store=store, now=at(4), announce=[closing, reminders, escalations])
    assert "wait.reminder" not in closing.lifecycle_events
    assert [e.type for e in closing.events] == []
    assert [e.type for e in reminders.events] == ["wait.reminder"]
    assert [e.type for e in escalations.events] == ["wait.escalated"]
    assert [(d.announcer, d.ok) for d in report.events] == [("memory", True)] * 2


class _Remembers:
    """A third-party store that records no follow-ups (it is not a FollowUpStore)."""

    def __init__(self, inner: SqliteQuestionStore) -> None:
        self._inner = inner

    def find(self, question_id: str, thread_id: str | None = None) -> list[StoredQuestion]:
        return self._inner.find(question_id, thread_id)

    def open_questions(self) -> list[StoredQuestion]:
        return self._inner.open_questions()

    def open_questions_past(self, now: datetime | str | None = None) -> list[StoredQuestion]:
        return self._inner.open_questions_past(now)

    def transition(self, *args: Any, **kwargs: Any) -> Transition:
        return self._inner.transition(*args, **kwargs)

    def reopen(self, closed: StoredQuestion) -> bool:
        return self._inner.reopen(closed)

    def close(self) -> None:
        self._inner.close()


def test_a_store_that_records_no_follow_ups_skips_them_and_says_so(
    inbox: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ask(inbox, **POLICY)
    heard = MemoryAnnounce().with_lifecycle_events(*FOLLOW_UPS)
    store: QuestionStore = _Remembers(SqliteQuestionStore(inbox))
    with caplog.at_level(logging.WARNING, logger="agent_wait.core.answer"):
        report = sweep(store=store, now=at(4), announce=[heard])
    store.close()
    assert heard.events == []
    assert [q.envelope.question_id for q in report.follow_ups_skipped] == ["q1"]
    assert "the store _Remembers records none (it is not a FollowUpStore)" in caplog.text


def test_agent_wait_sweep_says_what_it_followed_up(
    inbox: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ask(inbox, **POLICY)
    monkeypatch.setenv("AGENT_WAIT_HOME", str(inbox.parent))
    config = inbox.parent / "agent-wait.toml"
    config.write_text(
        '[[announce]]\nuse = "sqlite"\n\n[[announce]]\nuse = "memory"\n'
        'lifecycle_events = ["wait.reminder", "wait.escalated"]\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(config))
    assert main(["sweep", "--now", "2026-09-11T13:00:00Z"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "reminded q1 (thread t1)",
        "escalated q1 (thread t1) to approver_group=finance-leads",
        "announced wait.reminder of q1 to memory",
        "announced wait.escalated of q1 to memory",
    ]
    assert main(["sweep", "--now", "2026-09-11T13:05:00Z"]) == 0
    assert capsys.readouterr().out == ""


class _Down(MemoryAnnounce):
    """Fault injection: a channel down for its next ``outages`` follow-ups."""

    name = "pager"

    def __init__(self, outages: int) -> None:
        super().__init__()
        self.outages = outages

    def deliver_event(self, event: LifecycleEvent) -> Receipt | None:
        if self.outages:
            self.outages -= 1
            raise DeliveryFailed("pager gateway answered 503", retryable=True)
        return super().deliver_event(event)


def test_a_failed_follow_up_is_tried_again_for_its_announcer_only_until_delivered(
    inbox: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ask(inbox, **POLICY)
    pager = _Down(outages=2).with_lifecycle_events(*FOLLOW_UPS)
    memory = cast("MemoryAnnounce", announcer("memory", lifecycle_events=list(FOLLOW_UPS)))
    with SqliteQuestionStore(inbox) as store, caplog.at_level(logging.WARNING):
        first = sweep(store=store, now=at(1), announce=[memory, pager])
        again = sweep(store=store, now=at(1.1), announce=[memory, pager])
        delivered = sweep(store=store, now=at(1.2), announce=[memory, pager])
        after = sweep(store=store, now=at(1.3), announce=[memory, pager])
        [question] = store.find("q1", "t1")
    assert [(d.announcer, d.ok) for d in first.events] == [("memory", True), ("pager", False)]
    assert [(d.announcer, d.ok) for d in again.events] == [("pager", False)]
    assert [(d.announcer, d.ok) for d in delivered.events] == [("pager", True)]
    assert after.events == []
    assert [e.reminder for e in memory.events] == [1]  # never sent twice where it arrived
    assert [(e.type, e.reminder) for e in pager.events] == [("wait.reminder", 1)]
    assert "not delivered to pager (attempt 2: DeliveryFailed: pager gateway answered 503)" in (
        caplog.text
    )
    assert sorted(question.follow_ups) == [
        "failed:1:pager:reminder:1",
        "failed:2:pager:reminder:1",
        "reminder:1",
        "retry:2:pager:reminder:1",
        "retry:3:pager:reminder:1",
    ]


def test_a_failed_follow_up_is_not_tried_again_past_the_deadline(inbox: Path) -> None:
    ask(inbox, **POLICY)
    pager = _Down(outages=1).with_lifecycle_events("wait.last_warning")
    with SqliteQuestionStore(inbox) as store:
        assert not sweep(store=store, now=at(7.5), announce=[pager]).events[0].ok
        late = sweep(store=store, now=at(8.5), announce=[pager])
    assert late.events == []  # the default decided: the last call is moot
    assert pager.events == []


@pytest.mark.parametrize(
    "step",
    [
        "reminder",
        "reminder:x",
        "failed:0:pager:reminder:1",
        "retry:1:pa ger:escalated",
        "sent:1:a:b",
    ],
)
def test_a_step_that_is_no_follow_up_is_refused_naming_it(inbox: Path, step: str) -> None:
    ask(inbox, **POLICY)
    with (
        SqliteQuestionStore(inbox) as store,
        pytest.raises(ValueError, match=re.escape(repr(step))),
    ):
        store.claim_follow_up("t1", "q1", step)
