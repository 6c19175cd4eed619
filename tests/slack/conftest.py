"""The Slack fake, an announcer posting to it, and a sqlite inbox and entry point to answer into."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import Question, SqliteEntry, SqliteQuestionStore, WaitPolicy
from agent_wait.slack import SlackAnnounce
from tests.slack.fake_slack import SIGNING_SECRET, TOKEN, FakeSlack, fake_slack

REFUND = Question(
    question_id="q-refund",
    question={"function": "issue_refund", "args": {"order_id": "order-4471", "amount": 41000}},
    policy=WaitPolicy(
        timeout="P3D", default={"action": "reject"}, tags={"approver_group": "finance"}
    ),
    source={"function": "issue_refund"},
    answer_schema={
        "type": "object",
        "properties": {
            "action": {"enum": ["approve", "reject"]},
            "args": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "integer"}},
                "additionalProperties": False,
            },
            "reason": {"type": "string"},
        },
        "required": ["action"],
    },
)


@pytest.fixture
def slack_api() -> Iterator[FakeSlack]:
    with fake_slack() as fake:
        yield fake


def make_slack(fake: FakeSlack, tmp_path: Path, **options: Any) -> SlackAnnounce:
    settings: dict[str, Any] = {
        "token": TOKEN,
        "signing_secret": SIGNING_SECRET,
        "base_url": fake.base_url,
        "messages_path": tmp_path / "slack-messages.sqlite3",
        "timeout": 10,
        "channel": "#approvals",
        **options,
    }
    return SlackAnnounce(**settings)


@pytest.fixture
def slack(slack_api: FakeSlack, tmp_path: Path) -> Iterator[SlackAnnounce]:
    announcer = make_slack(slack_api, tmp_path)
    yield announcer
    announcer.close()


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    return tmp_path / "inbox.sqlite3"


@pytest.fixture
def store(inbox: Path) -> Iterator[SqliteQuestionStore]:
    with SqliteQuestionStore(inbox) as questions:
        yield questions


@pytest.fixture
def entry(inbox: Path) -> Iterator[SqliteEntry]:
    with SqliteEntry(inbox) as messages:
        yield messages


def sent(entry: SqliteEntry) -> list[dict[str, Any]]:
    """Every answer message the entry point holds, acknowledged."""
    found: list[dict[str, Any]] = []
    while batch := entry.receive(100):
        for received in batch:
            found.append(received.message)
            assert entry.ack(received)
    return found
