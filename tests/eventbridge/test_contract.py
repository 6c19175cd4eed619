"""The announcer conformance kit, run against EventBridgeAnnounce on a real moto server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce, publish
from agent_wait.eventbridge import EventBridgeAnnounce
from agent_wait.testing import AnnouncerContract
from tests.aws_moto import Aws, create_queue, drain, questions


def _bus_to_queue(aws: Aws, name: str) -> tuple[Any, str]:
    events, sqs = aws.client("events"), aws.client("sqs")
    events.create_event_bus(Name=name)
    url, arn = create_queue(sqs, name)
    pattern = {"source": ["agent-wait"], "detail-type": ["wait.created"]}
    events.put_rule(Name="questions", EventBusName=name, EventPattern=json.dumps(pattern))
    events.put_targets(Rule="questions", EventBusName=name, Targets=[{"Id": "q", "Arn": arn}])
    return sqs, url


class TestEventBridgeContract(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _bus(self, aws: Aws) -> None:
        self.aws = aws
        self.sqs, self.url = _bus_to_queue(aws, "contract")

    def make_announcer(self) -> BaseAnnounce:
        return EventBridgeAnnounce("contract", **self.aws.options)

    def make_failing_announcer(self) -> BaseAnnounce:
        return EventBridgeAnnounce("missing", **self.aws.options)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        return [json.loads(message["Body"])["detail"] for message in drain(self.sqs, self.url)]


def test_configured_by_the_environment(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    sqs, url = _bus_to_queue(aws, "from-env")
    entry = {"use": "eventbridge", "bus_name": "from-env", **aws.options}
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps([entry]))
    report = publish(questions(2), "t-1")
    assert report.ok, report.failures
    assert {d.announcer for d in report.deliveries} == {"eventbridge"}
    details = [json.loads(m["Body"])["detail"] for m in drain(sqs, url)]
    assert sorted(d["question_id"] for d in details) == ["q0", "q1"]
