"""Lifecycle events on the real Redis: a stream entry of their own, and the question's hash status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis

from agent_wait.core import BaseAnnounce, LifecycleEvent, SqliteAnnounce, SqliteEntry
from agent_wait.host import handle_message
from agent_wait.redis import RedisAnnounce
from tests.core.test_answer import LATER, ask, run
from tests.core.test_host import Ledger, reply
from tests.core.test_lifecycle import sweep_due
from tests.inbox.conftest import login, make_client
from tests.inbox.test_app import answer_form


@pytest.fixture(autouse=True)
def _names_given_with_by(monkeypatch: pytest.MonkeyPatch) -> None:
    # agent-wait answer --by names who answers here; the configuration must allow it.
    monkeypatch.setenv("AGENT_WAIT_ALLOW_BY", "1")


def test_an_answer_is_an_entry_and_closes_the_indexed_question(
    redis_url: str, names: tuple[str, str], client: redis.Redis
) -> None:
    stream, prefix = names
    host = Ledger()
    with RedisAnnounce(redis_url, stream=stream, index=True, index_prefix=prefix) as announce:
        announce.with_lifecycle_events("wait.answered")
        handle_message(host, {"thread_id": "order/1"}, announce, strict=True)
        handled = handle_message(host, reply("order/1-q1", thread_id="order/1"), announce)
    [delivery] = handled.events
    assert delivery.ok
    entries = client.xrange(stream)
    # The event follows what the resumed run asked next.
    assert [(fields["type"], fields["question_id"]) for _, fields in entries] == [
        ("wait.created", "order/1-q1"),
        ("wait.created", "order/1-q2"),
        ("wait.answered", "order/1-q1"),
    ]
    entry_id, fields = entries[2]
    assert delivery.message_id == entry_id
    event = LifecycleEvent.model_validate_json(fields["event"])
    assert (event.type, event.thread_id, event.question_id, event.outcome) == (
        "wait.answered",
        "order/1",
        "order/1-q1",
        "resumed",
    )
    assert fields == {
        "event": fields["event"],
        "dedupe_key": "wait.answered:order%2F1:order/1-q1",
        "type": "wait.answered",
        "thread_id": "order/1",
        "question_id": "order/1-q1",
    }
    # The question's hash says it was answered; the next question's is still open.
    assert client.hget(f"{prefix}wait.created:order%2F1:order/1-q1", "status") == "answered"
    assert client.hget(f"{prefix}wait.created:order%2F1:order/1-q2", "status") == "open"


def test_an_expiry_never_creates_a_hash(
    redis_url: str, names: tuple[str, str], client: redis.Redis, tmp_path: Path
) -> None:
    stream, prefix = names
    with RedisAnnounce(
        redis_url, stream=stream, index=True, index_prefix=prefix
    ).with_lifecycle_events("wait.expired") as announce:
        report, _ = sweep_due(tmp_path, [announce])
    [delivery] = report.events
    assert delivery.ok
    [(_, fields)] = client.xrange(stream)
    assert (fields["type"], fields["dedupe_key"]) == ("wait.expired", "wait.expired:t1:due")
    assert list(client.scan_iter(match=f"{prefix}*")) == []


def test_an_unreachable_server_is_reported(closed_port: int, tmp_path: Path) -> None:
    with RedisAnnounce(f"redis://127.0.0.1:{closed_port}/0", timeout=1).with_lifecycle_events(
        "wait.expired"
    ) as announce:
        report, stored = sweep_due(tmp_path, [announce])
    assert stored.status == "expired"
    [failed] = report.events
    assert not failed.ok
    assert failed.error is not None
    assert failed.error.startswith("DeliveryFailed: Redis: ConnectionError")


def test_agent_wait_sweep_adds_the_expiry_to_a_configured_stream(
    redis_url: str,
    names: tuple[str, str],
    client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stream, prefix = names
    inbox = tmp_path / "inbox.sqlite3"
    ask(inbox, "due", timeout="PT1H", default={"action": "reject"})
    configured = [
        {"use": "sqlite", "path": str(inbox)},
        {
            "use": "redis",
            "url": redis_url,
            "stream": stream,
            "index": True,
            "index_prefix": prefix,
            "lifecycle_events": ["wait.expired"],
        },
    ]
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(configured))
    code, out, err = run("sweep", "--path", str(inbox), "--now", LATER)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "announced wait.expired of due to redis"
    [(_, fields)] = client.xrange(stream)
    assert (fields["type"], fields["dedupe_key"]) == ("wait.expired", "wait.expired:t1:due")
    event = LifecycleEvent.model_validate_json(fields["event"])
    assert (event.by, event.outcome, event.at) == ("sweeper", "default_sent", LATER)


def answered(client: redis.Redis, stream: str) -> list[tuple[str, str | None]]:
    """Each ``wait.answered`` of the stream: its question and who answered."""
    events = [
        LifecycleEvent.model_validate_json(fields["event"])
        for _, fields in client.xrange(stream)
        if fields["type"] == "wait.answered"
    ]
    return [(e.question_id, e.by) for e in events]


def events_of(client: redis.Redis, stream: str) -> list[dict[str, Any]]:
    """The envelopes of the stream's questions."""
    return [
        json.loads(fields["envelope"])
        for _, fields in client.xrange(stream)
        if fields["type"] == "wait.created"
    ]


def serve_one(host: Ledger, inbox: Path, announce: list[BaseAnnounce]) -> dict[str, Any]:
    """Take the next answer from the inbox's entry point and handle it, as a served host does."""
    with SqliteEntry(inbox) as entry:
        [received] = entry.receive(1)
        handle_message(host, received.message, announce, strict=True)
        assert entry.ack(received)
    return received.message


def test_the_approver_named_by_agent_wait_answer_reaches_wait_answered(
    redis_url: str,
    names: tuple[str, str],
    client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stream, _ = names
    inbox = tmp_path / "inbox.sqlite3"
    monkeypatch.setenv("AGENT_WAIT_ENTRY", json.dumps({"use": "sqlite", "path": str(inbox)}))
    host = Ledger()
    with (
        SqliteAnnounce(inbox) as table,
        RedisAnnounce(redis_url, stream=stream).with_lifecycle_events("wait.answered") as events,
    ):
        announce: list[BaseAnnounce] = [table, events]
        handle_message(host, {"thread_id": "t"}, announce, strict=True)
        code, _, err = run("answer", "t-q1", "approve", "--by", "alice", "--path", str(inbox))
        assert (code, err) == (0, "")
        assert serve_one(host, inbox, announce)["answered_by"] == "alice"
        # An answer message that names nobody (a consumer written before the field): null.
        [asked] = [e for e in events_of(client, stream) if e["question_id"] == "t-q2"]
        with SqliteEntry(inbox) as entry:
            entry.send({**asked["reply_with"], "answer": {"action": "approve"}})
        assert "answered_by" not in serve_one(host, inbox, announce)
    assert answered(client, stream) == [("t-q1", "alice"), ("t-q2", None)]


def test_the_inbox_user_who_answered_reaches_wait_answered(
    redis_url: str, names: tuple[str, str], client: redis.Redis, tmp_path: Path
) -> None:
    stream, _ = names
    inbox = tmp_path / "inbox.sqlite3"
    host = Ledger()
    with (
        SqliteAnnounce(inbox) as table,
        RedisAnnounce(redis_url, stream=stream).with_lifecycle_events("wait.answered") as events,
    ):
        announce: list[BaseAnnounce] = [table, events]
        handle_message(host, {"thread_id": "t"}, announce, strict=True)
        for browser in make_client(inbox):
            login(browser, "Alice Example")
            response = answer_form(browser, "t-q1", "t", action="approve")
            assert response.status_code == 303, response.text
        assert serve_one(host, inbox, announce)["answered_by"] == "Alice Example"
    assert answered(client, stream) == [("t-q1", "Alice Example")]
