"""reply_to: a host publishes its entry point's public description; answers follow it."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    ConfigError,
    Question,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    WaitPolicy,
    publish,
)
from agent_wait.core._reply_to import check_reply_to
from agent_wait.host import answer, sweep
from agent_wait.host._worker import serve_host

T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("reply_to", "named", "hidden"),
    [
        ({"use": "redis", "url": "redis://:hunter2@cache:6379/0"}, "reply_to.url", "hunter2"),
        ({"use": "rabbitmq", "url": "amqp://guest:guest@mq:5672/"}, "reply_to.url", "guest:"),
        (
            {"use": "webhook", "url": "https://agent.example.com/in?token=abc123"},
            "'token'",
            "abc123",
        ),
        (
            {"use": "webhook", "url": "https://x.example/", "secret": "s3cr3t"},
            "reply_to.secret",
            "s3cr3t",
        ),
        (
            {"use": "webhook", "url": "https://x.example/", "secret_env": "HOOK"},
            "reply_to.secret_env",
            None,
        ),
        (
            {"use": "x", "hint": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
            "reply_to.hint",
            "MfKQ9r8",
        ),
        ({"use": "postgres", "url": "host=db password=pw1 dbname=a"}, "reply_to.url", "pw1"),
        ({"use": "x", "nested": [{"api_key": "k"}]}, "reply_to.nested[0].api_key", None),
    ],
)
def test_a_reply_to_that_would_publish_a_secret_is_refused(
    reply_to: dict[str, Any], named: str, hidden: str | None
) -> None:
    with pytest.raises(ConfigError) as caught:
        check_reply_to(reply_to)
    assert named in str(caught.value)
    if hidden is not None:
        assert hidden not in str(caught.value), "the error message shows the secret"


def test_a_public_description_passes_as_is() -> None:
    published = {
        "use": "sqs",
        "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/agent-inbound.fifo",
    }
    assert check_reply_to(published) == published


def test_publish_refuses_a_secret_reply_to_before_announcing(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    with pytest.raises(ConfigError, match="a password in the URL"):
        publish(
            [Question(question_id="q1", question={"n": 1})],
            "t1",
            SqliteAnnounce(inbox),
            reply_to={"use": "redis", "url": "redis://u:p@cache/0"},
        )
    with SqliteQuestionStore(inbox) as store:
        assert store.find("q1", None) == []


def test_the_sqlite_entry_describes_its_file_and_table(tmp_path: Path) -> None:
    with SqliteEntry(tmp_path / "in.sqlite3", table="inbound") as messages:
        assert messages.reply_to() == {
            "use": "sqlite",
            "path": str(tmp_path / "in.sqlite3"),
            "table": "inbound",
        }


def _ask(inbox: Path, reply_to: dict[str, Any], **policy: Any) -> None:
    publish(
        [Question(question_id="q1", question={"n": 1}, policy=WaitPolicy(**policy))],
        "t1",
        SqliteAnnounce(inbox),
        reply_to=reply_to,
        strict=True,
        clock=lambda: T0,
    )


def _drain(path: Path, table: str) -> list[dict[str, Any]]:
    with SqliteEntry(path, table=table) as messages:
        got = messages.receive(10)
        for received in got:
            messages.ack(received)
        return [received.message for received in got]


def test_answer_sends_to_the_reply_to_not_the_configured_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    host_file = tmp_path / "host.sqlite3"
    monkeypatch.setenv("AGENT_WAIT_ENTRY", f'{{"use": "sqlite", "path": "{inbox}"}}')
    with SqliteEntry(host_file, table="inbound") as host:
        _ask(inbox, host.reply_to())
    with SqliteQuestionStore(inbox) as store:
        answer("q1", "approve", by="alice", store=store)
    assert _drain(host_file, "inbound") == [
        {
            "thread_id": "t1",
            "question_id": "q1",
            "answer": {"action": "approve"},
            "answered_by": "alice",
            "identity_source": "claimed",
        }
    ]
    assert _drain(inbox, "agent_wait_messages") == []


def test_sweep_sends_each_default_to_its_questions_reply_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    host_file = tmp_path / "host.sqlite3"
    monkeypatch.setenv("AGENT_WAIT_ENTRY", f'{{"use": "sqlite", "path": "{inbox}"}}')
    _ask(
        inbox,
        {"use": "sqlite", "path": str(host_file)},
        timeout="PT1M",
        default={"action": "reject"},
    )
    with SqliteQuestionStore(inbox) as store:
        report = sweep(store=store, now="2026-09-11T10:00:00Z")
    assert [q.envelope.question_id for q in report.expired] == ["q1"]
    assert [m["answer"] for m in _drain(host_file, "agent_wait_messages")] == [{"action": "reject"}]


def test_a_reply_to_without_use_leaves_answers_to_the_configured_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = tmp_path / "inbox.sqlite3"
    monkeypatch.setenv("AGENT_WAIT_ENTRY", f'{{"use": "sqlite", "path": "{inbox}"}}')
    _ask(inbox, {"kind": "queue", "url": "https://example.invalid/answers"})
    with SqliteQuestionStore(inbox) as store:
        answer("q1", "approve", by="alice", store=store)
    assert len(_drain(inbox, "agent_wait_messages")) == 1


def test_serve_with_reply_to_true_publishes_the_entry_description(tmp_path: Path) -> None:
    seen: list[Any] = []
    stop = threading.Event()

    def handle_message(runnable: object, message: object, announce: object, **options: Any) -> None:
        seen.append(options["reply_to"])
        stop.set()

    with SqliteEntry(tmp_path / "served.sqlite3") as messages:
        messages.send({"thread_id": "t1", "input": {}})
        serve_host(handle_message, object(), messages, reply_to=True, wait=0.2, stop=stop)
        assert seen == [messages.reply_to()]


def test_serve_refuses_to_publish_an_entry_without_a_description(tmp_path: Path) -> None:
    class Undescribed(SqliteEntry):
        def describe(self) -> dict[str, Any]:
            return super(SqliteEntry, self).describe()

    with (
        Undescribed(tmp_path / "x.sqlite3") as messages,
        pytest.raises(ConfigError, match="no public description"),
    ):
        serve_host(lambda *a, **k: None, object(), messages, reply_to=True)
