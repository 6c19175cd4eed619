"""A deployment in separate processes: a LangGraph worker parks, Apprise notifies, then reminds.

The worker (``tests.channel_worker``) publishes to the configured inbox and Apprise announcer;
``agent-wait sweep`` runs in two processes at once; this process is the JSON webhook Apprise
posts to (``json://``), as Teams, ntfy or Discord would receive it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from agent_wait.core import SqliteQuestionStore, default_entry
from tests.apprise.conftest import Notifications
from tests.channel_worker import Process, sweeps_racing

INBOX = "https://inbox.example.com"


@pytest.fixture
def worker(
    tmp_path: Path, notifications: Notifications, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Process]:
    config = tmp_path / "agent-wait.toml"
    config.write_text(
        f"""
[[announce]]
use = "sqlite"

[[announce]]
use = "apprise"
urls_env = "APPRISE_TEST_URLS"
inbox_url = "{INBOX}"
lifecycle_events = ["wait.reminder", "wait.escalated", "wait.answered"]
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path))
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(config))
    monkeypatch.setenv("APPRISE_TEST_URLS", notifications.url("/approvals"))
    process = Process([sys.executable, "-m", "tests.channel_worker"], dict(os.environ))
    try:
        assert process.line() == "serving"
        yield process
    finally:
        process.stop()


def test_the_question_and_one_reminder_reach_the_webhook_with_the_inbox_link(
    worker: Process, notifications: Notifications, tmp_path: Path
) -> None:
    with default_entry() as messages:
        messages.send({"thread_id": "refund 19", "input": {"order": "A-19", "amount": 75}})
    [asked] = notifications.wait_for("/approvals", 1)
    with SqliteQuestionStore(tmp_path / "inbox.sqlite3") as store:
        [parked] = store.open_questions()
    envelope = parked.envelope
    link = f"{INBOX}/questions/{quote(envelope.question_id, safe='')}?" + urlencode(
        {"thread": "refund 19"}
    )
    assert asked["title"] == "Approval needed: issue_refund"
    assert f"Answer: {link}" in asked["message"].splitlines()
    assert "order: A-19" in asked["message"].splitlines()
    assert envelope.follow_up is not None

    for done in sweeps_racing(envelope.follow_up.remind_at[0]):
        assert done.returncode == 0, done.stderr
    bodies = notifications.wait_for("/approvals", 2)

    assert [b["title"] for b in bodies] == [
        "Approval needed: issue_refund",
        "Reminder: Approval needed: issue_refund",
    ]
    assert f"Answer: {link}" in bodies[1]["message"].splitlines()
    assert worker.lines.empty()  # nothing ran: the question is still waiting
