"""Lifecycle events over real HTTP: the sweeper's wait.expired, signed, with its own dedupe key."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agent_wait.core import LifecycleEvent
from agent_wait.webhook import WebhookAnnounce, verify
from tests.core.test_answer import LATER
from tests.core.test_lifecycle import sweep_due

from .conftest import SECRET, Receiver, Step


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
