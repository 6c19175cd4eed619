"""AppriseAnnounce notifies a real JSON webhook: the title and body summarise the call."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agent_wait.apprise import AppriseAnnounce
from agent_wait.core import (
    ConfigError,
    LifecycleEvent,
    MemoryAnnounce,
    Question,
    WaitPolicy,
    apublish,
    publish,
)
from agent_wait.host._lifecycle import lifecycle_event, publish_events
from tests.apprise.conftest import Notifications

REFUND = Question(
    question_id="q-refund/1",
    question={"function": "issue_refund", "args": {"order": "A-17", "amount": 41000}},
    policy=WaitPolicy(timeout=timedelta(hours=4), default={"action": "reject"}),
)


def test_a_question_reaches_the_webhook_with_its_summary_and_inbox_link(
    notifications: Notifications,
) -> None:
    hook = AppriseAnnounce([notifications.url("/ops")], inbox_url="https://inbox.example.com/")
    report = publish([REFUND], thread_id="order 4471", announce=hook)

    assert report.ok, report.failures
    (received,) = notifications.at("/ops")
    assert received["title"] == "Approval needed: issue_refund"
    envelope = report.envelopes[0]
    assert received["message"].splitlines() == [
        "order: A-17",
        "amount: 41000",
        "Actions: approve, reject",
        f"Deadline: {envelope.expires_at}",
        'If nobody answers: {"action": "reject"}',
        "Thread: order 4471",
        "Answer: https://inbox.example.com/questions/q-refund%2F1?thread=order+4471",
    ]
    assert received["type"] == "info"


async def test_the_async_path_notifies_every_url(notifications: Notifications) -> None:
    hook = AppriseAnnounce(f"{notifications.url('/a')}, {notifications.url('/b')}")
    report = await apublish([REFUND], thread_id="t-async", announce=hook)

    assert report.ok, report.failures
    assert [n["title"] for n in notifications.at("/a") + notifications.at("/b")] == [
        "Approval needed: issue_refund"
    ] * 2


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_refusing_url_is_reported_and_the_others_still_notified(
    notifications: Notifications, use_async: bool
) -> None:
    notifications.refuse.add("/down")
    hook = AppriseAnnounce([notifications.url("/up"), notifications.url("/down")])
    if use_async:
        report = await apublish([REFUND], thread_id="t-fail", announce=hook)
    else:
        report = publish([REFUND], thread_id="t-fail", announce=hook)

    assert not report.ok
    (failure,) = report.failures
    assert "URL 2 (json://) of 2" in str(failure.error)
    assert "127.0.0.1" not in str(failure.error)  # the URL may hold a token: never shown
    assert len(notifications.at("/up")) == 1


def test_urls_from_the_environment(
    notifications: Notifications, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPRISE_TEST_URLS", notifications.url("/env"))
    hook = AppriseAnnounce(urls_env="APPRISE_TEST_URLS")

    assert publish([REFUND], thread_id="t-env", announce=hook).ok
    assert len(notifications.at("/env")) == 1


def test_lifecycle_events_are_notified(notifications: Notifications) -> None:
    hook = AppriseAnnounce([notifications.url("/events")]).with_lifecycle_events("wait.expired")
    event = LifecycleEvent.model_validate(
        {
            "type": "wait.expired",
            "event_id": "01JAV9Q4M2T7XK3N8B5RZC1WDE",
            "thread_id": "t-ev",
            "question_id": "q-ev",
            "at": "2026-01-02T03:04:05Z",
            "by": "sweeper",
            "outcome": "default_applied",
        }
    )
    hook.deliver_event(event)

    (received,) = notifications.at("/events")
    assert received["title"] == "Expired: q-ev"
    assert received["type"] == "warning"
    assert "by sweeper" in received["message"]


def test_a_refused_answer_is_notified_as_a_failure(notifications: Notifications) -> None:
    hook = AppriseAnnounce([notifications.url("/refused")]).with_lifecycle_events(
        "wait.answer_refused"
    )
    event = LifecycleEvent.model_validate(
        {
            "type": "wait.answer_refused",
            "event_id": "01JAV9Q4M2T7XK3N8B5RZC1WDF",
            "thread_id": "t-ref",
            "question_id": "q-ref",
            "at": "2026-01-02T03:04:05Z",
            "by": "alice",
            "outcome": "refused",
            "reason": "amount over the limit",
        }
    )
    hook.deliver_event(event)

    (received,) = notifications.at("/refused")
    assert received["title"] == "Answer refused: q-ref"
    assert received["type"] == "failure"


@pytest.mark.parametrize(
    ("kind", "title", "first", "notify_type"),
    [
        ("wait.reminder", "Reminder: Approval needed: issue_refund", "order: A-17", "info"),
        (
            "wait.escalated",
            "Escalated: Approval needed: issue_refund",
            "Escalated to approver_group=finance-leads.",
            "warning",
        ),
        (
            "wait.last_warning",
            "Last call: Approval needed: issue_refund",
            "Unless someone answers by {deadline}, the default decides.",
            "warning",
        ),
    ],
)
def test_a_follow_up_repeats_the_question_with_the_inbox_link(
    notifications: Notifications, kind: str, title: str, first: str, notify_type: str
) -> None:
    hook = AppriseAnnounce(
        [notifications.url("/follow")], inbox_url="https://inbox.example.com"
    ).with_lifecycle_events(kind)
    [envelope] = publish([REFUND], thread_id="t-follow", announce=MemoryAnnounce()).envelopes
    event = lifecycle_event(
        kind,
        "t-follow",
        REFUND.question_id,
        outcome="reminded",
        by="sweeper",
        reminder=1 if kind == "wait.reminder" else None,
        escalated_to={"approver_group": "finance-leads"} if kind == "wait.escalated" else None,
        envelope=envelope,
    )
    [delivery] = publish_events([event], hook)

    assert delivery.ok, delivery.error
    (received,) = notifications.at("/follow")
    lines = received["message"].splitlines()
    assert (received["title"], received["type"]) == (title, notify_type)
    assert lines[0] == first.format(deadline=envelope.expires_at)
    assert lines[-1] == ("Answer: https://inbox.example.com/questions/q-refund%2F1?thread=t-follow")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"urls": []}, "give at least one Apprise URL"),
        ({"urls": ["not a url"]}, "URL 1 is not an Apprise URL"),
        (
            {"urls": ["nosuchservice://x/y"]},
            "URL 1 (nosuchservice://) is not a URL Apprise supports",
        ),
        ({"urls": ["json://h/p"], "inbox_url": "ftp://x"}, "option 'inbox_url'"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match="apprise") as raised:
        AppriseAnnounce(**options)  # type: ignore[arg-type]
    assert message in str(raised.value)
