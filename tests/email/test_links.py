"""The mail arrives on a real SMTP server; its links confirm on GET and answer once on POST."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from agent_wait.core import (
    Question,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
)
from agent_wait.email import EmailAnnounce, LinkSigner, links_app
from tests.email.conftest import SECRET, Mailbox

LINKS = "http://testserver"
REFUND = Question(
    question_id="q-refund",
    question={
        "function": "issue_refund",
        "args": {"order": "A-17", "amount": 41000, "note": "<script>alert(1)</script>"},
    },
    policy=WaitPolicy(timeout=timedelta(hours=4), default={"action": "reject"}),
)


def email_announcer(mailbox: Mailbox, **options: object) -> EmailAnnounce:
    settings: dict[str, object] = {
        "sender": "agent@example.com",
        "links_url": LINKS,
        "secret": SECRET,
        "port": mailbox.port,
        "security": "none",
        "timeout": 10,
        **options,
    }
    return EmailAnnounce("127.0.0.1", **settings)  # type: ignore[arg-type]


@pytest.fixture
def inbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path))
    return tmp_path / "inbox.sqlite3"


@pytest.fixture
def client(inbox: Path, tmp_path: Path) -> Iterator[TestClient]:
    with (
        SqliteQuestionStore(inbox) as store,
        SqliteEntry(inbox) as entry,
        TestClient(
            links_app(SECRET, store, entry=entry, tokens_path=tmp_path / "links.sqlite3")
        ) as client,
    ):
        yield client


def links_of(message: EmailMessage) -> dict[str, str]:
    text = message.get_body(("plain",))
    assert text is not None
    return dict(
        re.findall(
            r"^(\w+): (http://testserver/answer\?token=\S+)$",
            text.get_content().replace("\r\n", "\n"),
            re.M,
        )
    )


def token_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["token"][0]


def ask(inbox: Path, mailbox: Mailbox, thread_id: str = "order-4471") -> EmailMessage:
    report = publish(
        [REFUND],
        thread_id,
        [SqliteAnnounce(inbox), email_announcer(mailbox, to=["alice@example.com"])],
        strict=True,
    )
    assert report.ok
    (message,) = mailbox.to("alice@example.com")
    return message


def status(inbox: Path, thread_id: str = "order-4471") -> tuple[str, str | None]:
    with SqliteQuestionStore(inbox) as store:
        (question,) = store.find("q-refund", thread_id)
    return question.status, question.answered_by


def test_the_message_has_text_and_html_parts_with_the_call_and_a_link_per_action(
    inbox: Path, mailbox: Mailbox
) -> None:
    message = ask(inbox, mailbox)

    assert message["Subject"] == "Approval needed: issue_refund (order-4471)"
    assert message["From"] == "agent@example.com"
    assert message.get_content_type() == "multipart/alternative"
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None
    assert html is not None
    plain = text.get_content().replace("\r\n", "\n")
    assert "amount: 41000" in plain
    assert 'If nobody answers: {"action": "reject"}' in plain
    assert re.search(r"^Deadline: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", plain, re.M)
    assert set(links_of(message)) == {"approve", "reject"}
    page = html.get_content()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>" not in page
    for link in links_of(message).values():
        assert link.replace("&", "&amp;") in page or link in page


def test_get_shows_a_confirmation_and_answers_nothing_then_post_answers_once(
    inbox: Path, mailbox: Mailbox, client: TestClient
) -> None:
    links = links_of(ask(inbox, mailbox))

    shown = client.get(links["approve"])
    assert shown.status_code == 200
    assert "Confirm: approve" in shown.text
    assert "alice@example.com" in shown.text
    assert "&lt;script&gt;" in shown.text
    assert "<script>" not in shown.text
    assert shown.headers["cache-control"] == "no-store"
    assert shown.headers["referrer-policy"] == "no-referrer"
    assert client.get(links["approve"]).status_code == 200  # a scanner's second fetch
    assert status(inbox) == ("open", None)

    answered = client.post("/answer", data={"token": token_of(links["approve"])})
    assert answered.status_code == 200, answered.text
    assert "Answer recorded" in answered.text
    assert status(inbox) == ("answered", "alice@example.com")
    with SqliteEntry(inbox) as entry:
        (sent,) = entry.receive(max_messages=10)
    assert sent.message["answer"] == {"action": "approve"}
    assert sent.message["answered_by"] == "alice@example.com"
    assert sent.message["identity_source"] == "email-link"

    again = client.post("/answer", data={"token": token_of(links["approve"])})
    assert again.status_code == 409
    assert "already used" in again.text
    other = client.post("/answer", data={"token": token_of(links["reject"])})
    assert other.status_code == 409
    assert "alice@example.com" in other.text  # who answered first
    assert status(inbox) == ("answered", "alice@example.com")


def test_a_forged_or_altered_token_is_refused(
    inbox: Path, mailbox: Mailbox, client: TestClient
) -> None:
    token = token_of(links_of(ask(inbox, mailbox))["approve"])
    body, _, signature = token.partition(".")
    forged = LinkSigner("another-secret-of-some-length").sign(
        "q-refund",
        "order-4471",
        "approve",
        "mallory@example.com",
        datetime.now(UTC) + timedelta(hours=1),
    )
    altered_signature = body + "." + ("A" if signature[0] != "A" else "B") + signature[1:]

    for bad in (forged, altered_signature, "not-a-token", ""):
        assert client.get("/answer", params={"token": bad}).status_code == 403
        refused = client.post("/answer", data={"token": bad})
        assert refused.status_code == 403
        assert "not valid" in refused.text
    assert status(inbox) == ("open", None)


def test_an_expired_token_is_refused(inbox: Path, mailbox: Mailbox, client: TestClient) -> None:
    ask(inbox, mailbox)
    expired = LinkSigner(SECRET).sign(
        "q-refund",
        "order-4471",
        "approve",
        "alice@example.com",
        datetime.now(UTC) - timedelta(seconds=1),
    )

    assert client.get("/answer", params={"token": expired}).status_code == 410
    refused = client.post("/answer", data={"token": expired})
    assert refused.status_code == 410
    assert "expired" in refused.text
    assert status(inbox) == ("open", None)


def test_a_link_expires_with_its_question(inbox: Path, mailbox: Mailbox) -> None:
    token = token_of(links_of(ask(inbox, mailbox))["approve"])
    link = LinkSigner(SECRET).verify(token)
    with SqliteQuestionStore(inbox) as store:
        (question,) = store.find("q-refund", "order-4471")
    deadline = datetime.fromisoformat(str(question.envelope.expires_at).replace("Z", "+00:00"))
    assert link.expires <= deadline
    assert (link.question_id, link.thread_id, link.action, link.recipient) == (
        "q-refund",
        "order-4471",
        "approve",
        "alice@example.com",
    )


def test_a_recipient_who_is_not_an_approver_is_refused_and_nothing_is_recorded(
    inbox: Path, mailbox: Mailbox, client: TestClient
) -> None:
    only_bob = REFUND.model_copy(
        update={"policy": REFUND.policy.model_copy(update={"approvers": ("bob@example.com",)})}
    )
    publish(
        [only_bob],
        "order-4471",
        [SqliteAnnounce(inbox), email_announcer(mailbox, to=["alice@example.com"])],
        strict=True,
    )
    (message,) = mailbox.to("alice@example.com")
    refused = client.post("/answer", data={"token": token_of(links_of(message)["approve"])})
    assert refused.status_code == 409
    assert (
        "alice@example.com (email-link) may not answer it: its approvers are bob@example.com"
        in refused.text
    )
    assert status(inbox) == ("open", None)
    with SqliteEntry(inbox) as entry:
        assert entry.receive(max_messages=10) == []
