"""The announcer conformance kit, run against SnsAnnounce on a real moto server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce, publish
from agent_wait.sns import SnsAnnounce
from agent_wait.testing import AnnouncerContract
from tests.aws_moto import ACCOUNT, REGION, Aws, create_queue, drain, questions


def _topic_to_queue(aws: Aws, name: str) -> tuple[str, Any, str]:
    sns, sqs = aws.client("sns"), aws.client("sqs")
    topic_arn = sns.create_topic(Name=name)["TopicArn"]
    url, queue_arn = create_queue(sqs, name)
    sns.subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    return topic_arn, sqs, url


class TestSnsContract(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _topic(self, aws: Aws) -> None:
        self.aws = aws
        self.topic_arn, self.sqs, self.url = _topic_to_queue(aws, "contract")

    def make_announcer(self) -> BaseAnnounce:
        return SnsAnnounce(self.topic_arn, **self.aws.options)

    def make_failing_announcer(self) -> BaseAnnounce:
        return SnsAnnounce(f"arn:aws:sns:{REGION}:{ACCOUNT}:missing", **self.aws.options)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        return [json.loads(message["Body"]) for message in drain(self.sqs, self.url)]


def test_configured_by_the_environment(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    topic_arn, sqs, url = _topic_to_queue(aws, "from-env")
    entry = {"use": "sns", "topic_arn": topic_arn, "endpoint_url": aws.url}
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps([entry]))
    report = publish(questions(2), "t-1")
    assert report.ok, report.failures
    assert {d.announcer for d in report.deliveries} == {"sns"}
    assert sorted(json.loads(m["Body"])["question_id"] for m in drain(sqs, url)) == ["q0", "q1"]
