"""Follow-up mail on a real SMTP server: reminders, escalation, the last call and closing notes."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agent_wait.core import (
    Question,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
)
from agent_wait.core._models import LIFECYCLE_TYPES
from agent_wait.email import EmailAnnounce, LinkSigner
from agent_wait.host import sweep
from agent_wait.host._lifecycle import lifecycle_event, publish_events
from tests.email.conftest import SECRET, Mailbox

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
ROUTES = {
    "approver_group:finance": ["clerk@example.com"],
    "approver_group:finance-leads": ["lead@example.com"],
}


def announcer(mailbox: Mailbox, **options: Any) -> EmailAnnounce:
    settings: dict[str, Any] = {
        "sender": "agent@example.com",
        "links_url": "https://approve.example.com",
        "secret": SECRET,
        "port": mailbox.port,
        "security": "none",
        "timeout": 10,
        "routes": ROUTES,
        **options,
    }
    return EmailAnnounce("127.0.0.1", **settings)


def text_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return part.get_content()


def html_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("html",))
    assert part is not None
    return part.get_content()


def mail(mailbox: Mailbox) -> list[tuple[str, str]]:
    with mailbox.lock:
        return [(m["To"], m["Subject"]) for m in mailbox.messages]


def test_the_sweeper_reminds_escalates_and_warns_by_mail_once_each(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    publish([PAY], "t-pay", SqliteAnnounce(inbox), strict=True, clock=lambda: T0)
    email = announcer(mailbox).with_lifecycle_events(*LIFECYCLE_TYPES)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        for hours in (1, 1.5, 4, 4.5, 7.5, 7.75, 8.5, 9):
            report = sweep(
                store=store, entry=entry, now=T0 + timedelta(hours=hours), announce=[email]
            )
            assert all(d.ok for d in report.events), [d.error for d in report.events]

    assert mail(mailbox) == [
        ("clerk@example.com", "Reminder: Approval needed: pay_invoice (t-pay)"),
        ("clerk@example.com", "Escalated: Approval needed: pay_invoice (t-pay)"),
        ("lead@example.com", "Escalated: Approval needed: pay_invoice (t-pay)"),
        ("clerk@example.com", "Last call: Approval needed: pay_invoice (t-pay)"),
        ("lead@example.com", "Last call: Approval needed: pay_invoice (t-pay)"),
        ("clerk@example.com", "Expired: pay_invoice (t-pay)"),
        ("lead@example.com", "Expired: pay_invoice (t-pay)"),
    ]
    reminder, escalated_clerk, escalated_lead, last_call, *_, expired = mailbox.messages
    assert "This question is still waiting for your answer." in text_of(reminder)
    assert "INV-9" in text_of(reminder)
    assert reminder["X-Agent-Wait-Dedupe-Key"] == "wait.reminder:t-pay:q-pay:1"
    assert "it now goes to you as well" in html_of(escalated_lead)
    assert (
        "Unless someone answers by 2026-09-11T17:00:00Z, the default "
        '({"action": "reject"}) decides.' in text_of(last_call)
    )
    assert 'Default applied: {"action": "reject"}' in text_of(expired)
    # The escalated approver's links are theirs: signed for their address, for each action.
    links = re.findall(r"https://approve\.example\.com/answer\?token=\S+", text_of(escalated_lead))
    signer = LinkSigner(SECRET)
    tokens = [signer.verify(parse_qs(urlsplit(link).query)["token"][0], T0) for link in links]
    assert [(t.action, t.recipient, t.question_id) for t in tokens] == [
        ("approve", "lead@example.com", "q-pay"),
        ("reject", "lead@example.com", "q-pay"),
    ]
    assert escalated_clerk["Message-ID"] != escalated_lead["Message-ID"]


def test_answered_and_refused_notes_reach_to_and_say_who_and_why(mailbox: Mailbox) -> None:
    email = announcer(mailbox, to=["audit@example.com"]).with_lifecycle_events(
        "wait.answered", "wait.answer_refused"
    )
    answered = lifecycle_event(
        "wait.answered", "t-pay", "q-pay", outcome="resumed", by="alice", at=T0
    )
    refused = lifecycle_event(
        "wait.answer_refused",
        "t-pay",
        "q-pay",
        outcome="invalid_answer",
        by="bob",
        at=T0,
        reason="answer.args: ['amont'] are not arguments of 'pay_invoice'",
    )

    deliveries = publish_events([answered, refused], email)

    assert [d.ok for d in deliveries] == [True, True]
    assert mail(mailbox) == [
        ("audit@example.com", "Answered: q-pay (t-pay)"),
        ("audit@example.com", "Answer refused: q-pay (t-pay)"),
    ]
    assert "Answered by alice; the agent took the answer (resumed)." in text_of(mailbox.messages[0])
    refused_html = html_of(mailbox.messages[1])
    assert "The agent refused the answer by bob" in refused_html
    assert "are not arguments of &#39;pay_invoice&#39;" in refused_html


def test_a_note_with_nobody_to_tell_is_reported_not_failed(mailbox: Mailbox) -> None:
    email = announcer(mailbox).with_lifecycle_events("wait.answered")
    event = lifecycle_event("wait.answered", "t-pay", "q-pay", outcome="resumed", at=T0)

    [delivery] = publish_events([event], email)

    assert delivery.ok
    assert delivery.notes == ("wait.answered not mailed: no 'to' recipients",)
    assert mailbox.messages == []


def test_a_follow_up_refused_by_the_server_is_a_reported_failure(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    publish([PAY], "t-pay", SqliteAnnounce(inbox), strict=True, clock=lambda: T0)
    mailbox.refuse.add("clerk@example.com")
    email = announcer(mailbox).with_lifecycle_events("wait.reminder")
    with SqliteQuestionStore(inbox) as store:
        report = sweep(store=store, now=T0 + timedelta(hours=1), announce=[email])
        [question] = store.find("q-pay")

    [delivery] = report.events
    assert not delivery.ok
    assert "1 of 1 recipients not reached (SMTPRecipientsRefused)" in str(delivery.error)
    assert question.is_open  # the parked run is untouched
