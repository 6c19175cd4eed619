"""A deployment in separate processes: a LangGraph worker parks, the email link answers, it resumes.

The worker (``tests.channel_worker``) and ``agent-wait email serve`` each run in their own
process on the same ``$AGENT_WAIT_HOME`` and configuration; this process plays the mail server
(aiosmtpd) and the approver's browser.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from agent_wait.core import SqliteQuestionStore, default_entry
from agent_wait.email import LinkSigner
from tests.channel_worker import WITHIN, Process, sweeps_racing
from tests.email.conftest import SECRET, Mailbox, free_port

AGENT_WAIT = shutil.which("agent-wait") or "agent-wait"


@pytest.fixture
def deployment(
    tmp_path: Path, mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, Process, Process]]:
    """The configuration, ``agent-wait email serve`` and the worker; yields the links URL."""
    port = free_port()
    links = f"http://127.0.0.1:{port}"
    config = tmp_path / "agent-wait.toml"
    config.write_text(
        f"""
[[announce]]
use = "sqlite"

[[announce]]
use = "email"
host = "127.0.0.1"
port = {mailbox.port}
security = "none"
sender = "agent@example.com"
links_url = "{links}"
secret_env = "AGENT_WAIT_EMAIL_SECRET"
timeout = 30
lifecycle_events = ["wait.reminder", "wait.escalated"]

[announce.routes]
"approver_group:finance" = ["cfo@example.com"]
"approver_group:finance-leads" = ["lead@example.com"]
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path))
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(config))
    monkeypatch.setenv("AGENT_WAIT_EMAIL_SECRET", SECRET)
    env = dict(os.environ)
    server = Process([AGENT_WAIT, "email", "serve", "--port", str(port)], env)
    worker = Process([sys.executable, "-m", "tests.channel_worker"], env)
    try:
        deadline = time.monotonic() + WITHIN
        while True:  # readiness: the links app answers its health check
            assert server.popen.poll() is None, server.stop()
            assert time.monotonic() < deadline, "agent-wait email serve did not start"
            try:
                if httpx.get(f"{links}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        assert worker.line() == "serving"
        yield links, server, worker
    finally:
        worker.stop()
        server.stop()


def test_a_parked_run_is_approved_from_the_email_and_resumes(
    deployment: tuple[str, Process, Process], mailbox: Mailbox, tmp_path: Path
) -> None:
    links, server, worker = deployment
    with default_entry() as messages:
        messages.send({"thread_id": "refund-17", "input": {"order": "A-17", "amount": 41000}})

    [message] = mailbox.wait_for(1)
    assert (message["To"], message["Subject"]) == (
        "cfo@example.com",
        "Approval needed: issue_refund (refund-17)",
    )
    html = message.get_body(("html",))
    assert html is not None
    assert "A-17" in html.get_content()
    text = message.get_body(("plain",))
    assert text is not None
    lines = text.get_content().replace("\r\n", "\n")
    found = dict(re.findall(r"^(approve|reject): (\S+)$", lines, re.M))
    assert set(found) == {"approve", "reject"}
    with SqliteQuestionStore(tmp_path / "inbox.sqlite3") as store:
        [parked] = store.open_questions()

    with httpx.Client(timeout=WITHIN) as browser:
        # Opening the link, as a mail scanner would, only shows the confirmation page.
        for _ in range(2):
            page = browser.get(found["approve"])
            assert page.status_code == 200
            assert "Answer: approve?" in page.text
        with SqliteQuestionStore(tmp_path / "inbox.sqlite3") as store:
            assert store.find(parked.envelope.question_id)[0].is_open
        token = re.findall(r'name="token" value="([^"]+)"', page.text)[0]

        answered = browser.post(f"{links}/answer", data={"token": token})
        assert answered.status_code == 200, answered.text
        assert worker.line() == "refunded 41000 on A-17"

        again = browser.post(f"{links}/answer", data={"token": token})
        assert again.status_code == 409
        assert "this link was already used" in again.text

        forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
        assert browser.get(f"{links}/answer", params={"token": forged}).status_code == 403
        assert browser.post(f"{links}/answer", data={"token": forged}).status_code == 403

        envelope = parked.envelope
        expired = LinkSigner(SECRET).sign(
            envelope.question_id,
            envelope.thread_id,
            "reject",
            "cfo@example.com",
            datetime.now(UTC) - timedelta(minutes=1),
        )
        assert browser.get(f"{links}/answer", params={"token": expired}).status_code == 410
        assert browser.post(f"{links}/answer", data={"token": expired}).status_code == 410

    with SqliteQuestionStore(tmp_path / "inbox.sqlite3") as store:
        [closed] = store.find(envelope.question_id)
    assert (closed.status, closed.answered_by) == ("answered", "cfo@example.com")
    assert worker.lines.empty()  # the refund ran once
    assert token not in server.stop()


def test_racing_sweepers_mail_the_reminder_and_the_escalation_once(
    deployment: tuple[str, Process, Process], mailbox: Mailbox, tmp_path: Path
) -> None:
    with default_entry() as messages:
        messages.send({"thread_id": "refund-18", "input": {"order": "A-18", "amount": 900}})
    mailbox.wait_for(1)
    with SqliteQuestionStore(tmp_path / "inbox.sqlite3") as store:
        [parked] = store.open_questions()
    follow_up = parked.envelope.follow_up
    assert follow_up is not None
    assert follow_up.escalate_at is not None

    for moment in (follow_up.remind_at[0], follow_up.escalate_at):
        for done in sweeps_racing(moment):
            assert done.returncode == 0, done.stderr
    mailbox.wait_for(4)

    assert [(m["To"], m["Subject"]) for m in mailbox.messages] == [
        ("cfo@example.com", "Approval needed: issue_refund (refund-18)"),
        ("cfo@example.com", "Reminder: Approval needed: issue_refund (refund-18)"),
        ("cfo@example.com", "Escalated: Approval needed: issue_refund (refund-18)"),
        ("lead@example.com", "Escalated: Approval needed: issue_refund (refund-18)"),
    ]
    with SqliteQuestionStore(tmp_path / "inbox.sqlite3") as store:
        [question] = store.find(parked.envelope.question_id)
    assert question.escalated_to == {"approver_group": "finance-leads"}
