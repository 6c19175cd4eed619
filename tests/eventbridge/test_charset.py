"""EventBridge Detail is valid JSON; what SQS and SNS targets refuse is escaped in it."""

from __future__ import annotations

import json

import pytest

from agent_wait.core import publish
from agent_wait.eventbridge import EventBridgeAnnounce
from tests.aws_moto import Aws, count_requests
from tests.aws_strict import REFUSED_TEXT, THREAD_ID, refusable_questions
from tests.eventbridge.test_eventbridge import (
    _bus_to_queue,  # pyright: ignore[reportPrivateUsage]
    _details,  # pyright: ignore[reportPrivateUsage]
)

pytestmark = pytest.mark.integration


def test_noncharacters_are_escaped_in_the_detail_and_reach_an_sqs_target(aws: Aws) -> None:
    events, sqs, url = _bus_to_queue(aws, queue="refusable")
    sent = count_requests(events, "events", "PutEvents")
    report = publish(
        refusable_questions(2), THREAD_ID, EventBridgeAnnounce("approvals", client=events)
    )
    assert report.ok, report.failures
    assert [d.notes for d in report.deliveries] == [(), ()]  # no attributes: nothing replaced
    details = [entry["Detail"] for call in sent for entry in call["Entries"]]
    assert len(details) == 2
    for detail in details:
        assert "\ufffe" not in detail
        assert "\uffff" not in detail
        assert "\\ufffe" in detail  # escaped, the JSON's value unchanged
    assert sorted((json.loads(d) for d in details), key=lambda d: d["question_id"]) == [
        e.to_dict() for e in report.envelopes
    ]
    delivered = sorted((e["detail"] for e in _details(sqs, url)), key=lambda d: d["question_id"])
    assert delivered == [e.to_dict() for e in report.envelopes]
    assert delivered[0]["question"]["args"]["note"] == REFUSED_TEXT
