"""The sweeper's follow-ups in Slack: thread replies with mentions, once each, tried again when down."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    FOLLOW_UP_TYPES,
    ConfigError,
    Question,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
)
from agent_wait.host import SweepReport, sweep
from agent_wait.slack import SlackAnnounce
from tests.slack.conftest import make_slack
from tests.slack.fake_slack import FakeSlack

T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
PAY = Question(
    question_id="q-pay",
    question={"function": "pay_invoice", "args": {"invoice": "INV-9", "amount": 1200}},
    policy=WaitPolicy(
        timeout="PT8H",
        default={"action": "reject"},
        tags={"approver_group": "finance"},
        remind=["PT1H"],
        escalate={"after": "PT4H", "to": {"approver_group": "finance-leads"}},
        last_warning="PT30M",
    ),
)
ROUTING: dict[str, Any] = {
    "channel": None,
    "routes": {
        "approver_group:finance": "#finance",
        "approver_group:finance-leads": "#finance-leads",
    },
    "mentions": {
        "approver_group:finance": ["S0FINANCE"],
        "approver_group:finance-leads": "U0LEAD",
    },
}
# The finance channel's question, then the finance leads' once escalated (the fake's IDs).
FINANCE, LEADS = "C0FINANCE", "C0FINANCELEADS"


def following(fake: FakeSlack, tmp_path: Path) -> SlackAnnounce:
    return make_slack(fake, tmp_path, **ROUTING).with_lifecycle_events(*FOLLOW_UP_TYPES)


def asked(slack: SlackAnnounce, inbox: Path) -> None:
    report = publish([PAY], "t-pay", [SqliteAnnounce(inbox), slack], strict=True, clock=lambda: T0)
    assert report.ok


def swept(inbox: Path, slack: SlackAnnounce, hours: float) -> SweepReport:
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        return sweep(store=store, entry=entry, now=T0 + timedelta(hours=hours), announce=[slack])


def thread_of(fake: FakeSlack, channel: str) -> list[str]:
    [ts] = fake.messages[channel]
    return fake.thread(channel, ts)


def test_reminder_escalation_and_last_call_are_thread_replies_with_mentions_once_each(
    slack_api: FakeSlack, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    slack = following(slack_api, tmp_path)
    asked(slack, inbox)
    assert list(slack_api.messages) == [FINANCE]

    for hours in (1, 1.5, 4, 4.5, 7.5, 7.75):
        report = swept(inbox, slack, hours)
        assert all(d.ok for d in report.events), [d.error for d in report.events]

    deadline = "<!date^1789146000^{date_short_pretty} at {time}|2026-09-11 17:00 UTC>"
    reminder, escalated, last_call = thread_of(slack_api, FINANCE)
    assert reminder == (
        "<!subteam^S0FINANCE> :bell: *Reminder:* this question is still waiting for an answer. "
        f"Deadline: {deadline}."
    )
    assert escalated.startswith("<@U0LEAD> :arrow_up: *Escalated:* nobody has answered yet")
    assert last_call.startswith(
        "<!subteam^S0FINANCE> <@U0LEAD> :alarm_clock: *Last call:* unless someone answers, "
        "the default (reject) decides."
    )
    # The escalation posted the question, with its buttons, to the finance leads too.
    [(ts, leads)] = slack_api.messages[LEADS].items()
    assert leads["blocks"][0]["text"]["text"] == "Approval needed: pay_invoice"
    assert [r.split(" :")[0] for r in slack_api.thread(LEADS, ts)] == [
        "<@U0LEAD>",
        "<!subteam^S0FINANCE> <@U0LEAD>",
    ]
    slack.close()


def test_bad_mentions_are_refused_naming_the_tag_and_the_value(
    slack_api: FakeSlack, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"'approver_group:finance'.*'#finance'.*user group"):
        make_slack(slack_api, tmp_path, mentions={"approver_group:finance": "#finance"})


def test_two_sweepers_at_once_reply_once(slack_api: FakeSlack, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    first = following(slack_api, tmp_path)
    asked(first, inbox)
    second = following(slack_api, tmp_path)  # another process's: its own connections
    start = threading.Barrier(2)
    reports: list[SweepReport] = []

    def sweeper(slack: SlackAnnounce) -> None:
        start.wait()
        reports.append(swept(inbox, slack, 1))

    racers = [threading.Thread(target=sweeper, args=(s,)) for s in (first, second)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()

    assert sorted(len(r.reminded) for r in reports) == [0, 1]
    assert len(thread_of(slack_api, FINANCE)) == 1
    first.close()
    second.close()


def test_a_follow_up_slack_failed_is_tried_again_by_the_next_sweep_and_delivered_once(
    slack_api: FakeSlack, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    slack = following(slack_api, tmp_path)
    asked(slack, inbox)

    slack_api.outage["chat.postMessage"] = 1  # Slack down for the reminder's reply
    with caplog.at_level(logging.WARNING):
        failed = swept(inbox, slack, 1)
    [delivery] = failed.events
    assert not delivery.ok
    assert "500" in (delivery.error or "")
    assert thread_of(slack_api, FINANCE) == []
    assert any(
        "wait.reminder of question q-pay of thread t-pay: not delivered to slack (attempt 1: "
        "DeliveryFailed: wait.reminder not delivered to 1 of 1 Slack conversations (HTTP 500)); the "
        "next "
        "sweep tries again" in r.getMessage()
        for r in caplog.records
    ), caplog.text

    # Two sweepers at once find it failed: one of them delivers it.
    second = following(slack_api, tmp_path)
    start = threading.Barrier(2)
    reports: list[SweepReport] = []

    def sweeper(announcer: SlackAnnounce) -> None:
        start.wait()
        reports.append(swept(inbox, announcer, 1.25))

    racers = [threading.Thread(target=sweeper, args=(s,)) for s in (slack, second)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert sorted(len(r.events) for r in reports) == [0, 1]
    assert all(d.ok for r in reports for d in r.events)
    [reply] = thread_of(slack_api, FINANCE)
    assert reply.startswith("<!subteam^S0FINANCE> :bell: *Reminder:*")

    # Delivered: no later sweep sends it again.
    assert swept(inbox, slack, 1.5).events == []
    assert len(thread_of(slack_api, FINANCE)) == 1
    with SqliteQuestionStore(inbox) as store:
        [question] = store.find("q-pay", "t-pay")
    assert dict(question.follow_ups) == {
        "reminder:1": "2026-09-11T10:00:00Z",
        "failed:1:slack:reminder:1": "2026-09-11T10:00:00Z",
        "retry:2:slack:reminder:1": "2026-09-11T10:15:00Z",
    }
    slack.close()
    second.close()


def test_a_follow_up_tried_again_replies_only_where_it_failed(
    slack_api: FakeSlack, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    slack = following(slack_api, tmp_path)
    asked(slack, inbox)
    assert swept(inbox, slack, 1).reminded
    assert swept(inbox, slack, 4).escalated  # the leads' channel has the question now
    # The last call's first reply (the finance channel's) fails; the leads' goes through.
    slack_api.outage["chat.postMessage"] = 1
    assert not swept(inbox, slack, 7.5).events[0].ok
    assert len(thread_of(slack_api, LEADS)) == 2
    assert len(thread_of(slack_api, FINANCE)) == 2

    retried = swept(inbox, slack, 7.6)
    assert [(d.ok, e.type) for d, e in zip(retried.events, retried.published, strict=True)] == [
        (True, "wait.last_warning")
    ]
    assert [r.split(" :")[1].split("*")[1] for r in thread_of(slack_api, FINANCE)] == [
        "Reminder:",
        "Escalated:",
        "Last call:",
    ]
    assert len(thread_of(slack_api, LEADS)) == 2
    slack.close()


def test_a_failure_still_failing_is_reported_again_and_a_closed_question_is_not_retried(
    slack_api: FakeSlack, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    slack = following(slack_api, tmp_path)
    asked(slack, inbox)
    slack_api.outage["chat.postMessage"] = 2
    assert not swept(inbox, slack, 1).events[0].ok
    assert not swept(inbox, slack, 1.1).events[0].ok  # still down: attempt 2, reported
    with SqliteQuestionStore(inbox) as store:
        [question] = store.find("q-pay", "t-pay")
        assert "failed:2:slack:reminder:1" in question.follow_ups
        store.transition("t-pay", "q-pay", "cancelled", by="ops")
    assert swept(inbox, slack, 1.2).events == []  # closed: nothing left to remind of
    assert thread_of(slack_api, FINANCE) == []
    slack.close()
