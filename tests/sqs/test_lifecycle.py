"""Lifecycle events on a real (moto) SQS queue: their own FIFO dedupe id, next to the questions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import LifecycleEvent
from agent_wait.host import handle_message
from agent_wait.sqs import SqsAnnounce
from tests.aws_moto import Aws, create_queue, drain
from tests.core.test_answer import LATER
from tests.core.test_host import Ledger, reply
from tests.core.test_lifecycle import sweep_due


def _typed(messages: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    bodies = [json.loads(m["Body"]) for m in messages]
    return sorted((b["type"], b["thread_id"], b["question_id"]) for b in bodies)


def test_an_answer_is_announced_on_a_fifo_queue_that_dedupes_its_questions(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals.fifo")
    host = Ledger()
    with SqsAnnounce(url, attributes={"team": "finance"}, **aws.options) as queue:
        queue.with_lifecycle_events("wait.answered")
        handle_message(host, {"thread_id": "t"}, queue, strict=True)
        handled = handle_message(host, reply("t-q1"), queue, strict=True)
        # The redelivered answer republishes t-q2, which the queue drops; no second event.
        again = handle_message(host, reply("t-q1"), queue, strict=True)
    [delivery] = handled.events
    assert delivery.ok
    assert delivery.message_id
    assert again.events == ()
    messages = drain(sqs, url)
    assert _typed(messages) == [
        ("wait.answered", "t", "t-q1"),
        ("wait.created", "t", "t-q1"),
        ("wait.created", "t", "t-q2"),
    ]
    [event_message] = [m for m in messages if m["MessageId"] == delivery.message_id]
    event = LifecycleEvent.model_validate_json(event_message["Body"])
    assert (event.outcome, event.by) == ("resumed", None)
    assert {k: v["StringValue"] for k, v in event_message["MessageAttributes"].items()} == {
        "type": "wait.answered",
        "thread_id": "t",
        "team": "finance",
    }


def test_the_sweeper_announces_an_expiry_on_a_standard_queue(aws: Aws, tmp_path: Path) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "audit")
    with SqsAnnounce(url, **aws.options).with_lifecycle_events("wait.expired") as queue:
        report, _ = sweep_due(tmp_path, [queue])
    [delivery] = report.events
    assert delivery.ok
    [message] = drain(sqs, url)
    event = LifecycleEvent.model_validate_json(message["Body"])
    assert (event.type, event.question_id, event.by, event.at) == (
        "wait.expired",
        "due",
        "sweeper",
        LATER,
    )


def test_a_missing_queue_is_reported_not_raised(aws: Aws, tmp_path: Path) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "gone")
    sqs.delete_queue(QueueUrl=url)
    with SqsAnnounce(url, **aws.options).with_lifecycle_events("wait.expired") as queue:
        report, stored = sweep_due(tmp_path, [queue])
    assert stored.status == "expired"
    [failed] = report.events
    assert not failed.ok
    assert failed.error is not None
    assert "NonExistentQueue" in failed.error or "QueueDoesNotExist" in failed.error


def test_a_configured_queue_that_opted_in_hears_the_answer(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "audit")
    configured = [
        {"use": "sqs", "queue_url": url, **aws.options, "lifecycle_events": ["wait.answered"]}
    ]
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(configured))
    host = Ledger()
    handle_message(host, {"thread_id": "t"}, strict=True)  # announce=None: the configuration
    handled = handle_message(host, reply("t-q1"), strict=True)
    assert [(d.announcer, d.ok) for d in handled.events] == [("sqs", True)]
    assert _typed(drain(sqs, url)) == [
        ("wait.answered", "t", "t-q1"),
        ("wait.created", "t", "t-q1"),
        ("wait.created", "t", "t-q2"),
    ]
