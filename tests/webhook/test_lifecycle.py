"""Lifecycle events over real HTTP: the sweeper's wait.expired, signed, with its own dedupe key."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent_wait.core import (
    BaseAnnounce,
    LifecycleEvent,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
)
from agent_wait.host import handle_message, sweep
from agent_wait.webhook import WebhookAnnounce, verify
from tests.core.test_answer import LATER, ask, run
from tests.core.test_host import Ledger
from tests.core.test_lifecycle import sweep_due

from .conftest import SECRET, Receiver, Step


@pytest.fixture(autouse=True)
def _names_given_with_by(monkeypatch: pytest.MonkeyPatch) -> None:
    # agent-wait answer --by names who answers here; the configuration must allow it.
    monkeypatch.setenv("AGENT_WAIT_ALLOW_BY", "1")


def test_the_sweeper_posts_a_signed_expiry(receiver: Receiver, tmp_path: Path) -> None:
    url = receiver.script("/events", Step(503), Step(200))
    with WebhookAnnounce(url, secret=SECRET, backoff=0.01).with_lifecycle_events(
        "wait.expired"
    ) as hook:
        report, _ = sweep_due(tmp_path, [hook], thread_id="order/4471")
    [delivery] = report.events
    assert (delivery.ok, delivery.attempts) == (True, 2)
    retried, request = receiver.requests("/events")
    body = verify(request.body, request.headers, SECRET)
    event = LifecycleEvent.model_validate(body)
    assert (event.type, event.thread_id, event.question_id, event.by, event.outcome) == (
        "wait.expired",
        "order/4471",
        "due",
        "sweeper",
        "default_sent",
    )
    assert request.headers["x-agent-wait-event"] == "wait.expired"
    assert request.headers["x-agent-wait-dedupe-key"] == "wait.expired:order%2F4471:due"
    # A retry is the same event: same id, same body.
    assert request.headers["webhook-id"] == retried.headers["webhook-id"] == event.event_id
    assert json.loads(retried.body) == body


def test_a_refused_event_is_reported_with_the_status(receiver: Receiver, tmp_path: Path) -> None:
    url = receiver.script("/events", Step(400))
    with WebhookAnnounce(url).with_lifecycle_events("wait.expired") as hook:
        report, stored = sweep_due(tmp_path, [hook])
    assert stored.status == "expired"  # the default went out; only the event failed
    [failed] = report.events
    assert not failed.ok
    assert failed.error is not None
    assert "400" in failed.error


def test_the_async_path_posts_on_the_shared_client(receiver: Receiver) -> None:
    url = receiver.script("/events", Step(200))
    event = LifecycleEvent.model_validate(
        {
            "type": "wait.answered",
            "event_id": "01JAV9Q4M2T7XK3N8B5RZC1WDE",
            "thread_id": "t1",
            "question_id": "q1",
            "at": LATER,
            "by": None,
            "outcome": "resumed",
        }
    )

    async def scenario() -> int | None:
        async with WebhookAnnounce(url) as hook:
            return (await hook.adeliver_event(event)).attempts

    assert asyncio.run(scenario()) == 1
    [request] = receiver.requests("/events")
    assert request.body == event.to_json()
    assert request.headers["x-agent-wait-dedupe-key"] == "wait.answered:t1:q1"


def _configure_sweep(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hook: dict[str, object]
) -> Path:
    inbox = tmp_path / "inbox.sqlite3"
    ask(inbox, "due", timeout="PT1H", default={"action": "reject"})
    configured = [{"use": "sqlite", "path": str(inbox)}, {"use": "webhook", **hook}]
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(configured))
    return inbox


def test_agent_wait_sweep_posts_the_expiry_to_a_configured_receiver(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = receiver.script("/events", Step(200))
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    inbox = _configure_sweep(
        monkeypatch, tmp_path, {"url": url, "secret_env": "HOOK_SECRET", "lifecycle_events": True}
    )
    code, out, err = run("sweep", "--path", str(inbox), "--now", LATER)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "announced wait.expired of due to webhook"
    [request] = receiver.requests("/events")
    event = LifecycleEvent.model_validate(verify(request.body, request.headers, SECRET))
    assert (event.type, event.question_id, event.by) == ("wait.expired", "due", "sweeper")
    assert request.headers["x-agent-wait-event"] == "wait.expired"


def test_agent_wait_sweep_reports_an_expiry_the_receiver_refused(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = receiver.script("/events", Step(400))
    inbox = _configure_sweep(
        monkeypatch, tmp_path, {"url": url, "lifecycle_events": ["wait.expired"]}
    )
    code, out, err = run("sweep", "--path", str(inbox), "--now", LATER)
    assert code == 1
    assert out.startswith("expired due (thread t1, ")  # the default went out
    warning, error = err.splitlines()
    assert warning.startswith("agent-wait: WARNING: agent-wait lifecycle event failed: ")
    assert error.startswith("agent-wait: due: wait.expired not announced to webhook (")
    assert "HTTP 400" in error
    with SqliteQuestionStore(inbox) as store:
        [stored] = store.find("due")
    assert stored.status == "expired"


def test_the_approver_named_by_agent_wait_answer_is_posted_in_wait_answered(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = receiver.script("/events", Step(200))
    inbox = tmp_path / "inbox.sqlite3"
    monkeypatch.setenv("AGENT_WAIT_ENTRY", json.dumps({"use": "sqlite", "path": str(inbox)}))
    host = Ledger()
    with (
        SqliteAnnounce(inbox) as table,
        WebhookAnnounce(url, secret=SECRET).with_lifecycle_events("wait.answered") as hook,
    ):
        announce: list[BaseAnnounce] = [table, hook]
        handle_message(host, {"thread_id": "t"}, announce, strict=True)
        code, _, err = run("answer", "t-q1", "approve", "--by", "alice", "--path", str(inbox))
        assert (code, err) == (0, "")
        with SqliteEntry(inbox) as entry:
            [received] = entry.receive(1)
            handled = handle_message(host, received.message, announce, strict=True)
            assert entry.ack(received)
    assert [d.ok for d in handled.events] == [True]
    # The questions went to the same URL; the event is the one POST of its type.
    [request] = [
        r
        for r in receiver.requests("/events")
        if r.headers["x-agent-wait-event"] == "wait.answered"
    ]
    event = LifecycleEvent.model_validate(verify(request.body, request.headers, SECRET))
    assert (event.question_id, event.by) == ("t-q1", "alice")


def test_the_sweeper_posts_each_reminder_and_the_escalation_once(
    receiver: Receiver, tmp_path: Path
) -> None:
    url = receiver.script("/follow-ups", *[Step(200)] * 3)
    inbox = tmp_path / "inbox.sqlite3"
    ask(
        inbox,
        "q-pay",
        thread_id="order/4471",
        timeout="PT8H",
        remind=["PT1H", "PT2H"],
        escalate={"after": "PT3H", "to": {"approver_group": "finance-leads"}},
    )
    with (
        WebhookAnnounce(url, secret=SECRET).with_lifecycle_events(
            "wait.reminder", "wait.escalated"
        ) as hook,
        SqliteQuestionStore(inbox) as store,
    ):
        for now in ("2026-09-11T10:00:00Z", "2026-09-11T11:00:00Z", "2026-09-11T12:00:00Z"):
            for _ in range(2):  # a second sweeper at the same moment sends nothing more
                report = sweep(store=store, now=now, announce=[hook])
                assert all(d.ok for d in report.events), report.events
    requests = receiver.requests("/follow-ups")
    assert [r.headers["x-agent-wait-dedupe-key"] for r in requests] == [
        "wait.reminder:order%2F4471:q-pay:1",
        "wait.reminder:order%2F4471:q-pay:2",
        "wait.escalated:order%2F4471:q-pay",
    ]
    escalated = LifecycleEvent.model_validate(verify(requests[2].body, requests[2].headers, SECRET))
    assert escalated.escalated_to == {"approver_group": "finance-leads"}
    assert escalated.envelope is not None
    assert escalated.envelope.question_id == "q-pay"
