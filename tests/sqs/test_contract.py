"""The announcer conformance kit, run against SqsAnnounce on a real moto server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce, publish
from agent_wait.sqs import SqsAnnounce
from agent_wait.testing import AnnouncerContract
from tests.aws_moto import ACCOUNT, Aws, create_queue, drain, questions


class TestSqsContract(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _queue(self, aws: Aws) -> None:
        self.aws = aws
        self.sqs = aws.client("sqs")
        self.url, _ = create_queue(self.sqs, "contract")

    def make_announcer(self) -> BaseAnnounce:
        return SqsAnnounce(self.url, **self.aws.options)

    def make_failing_announcer(self) -> BaseAnnounce:
        return SqsAnnounce(f"{self.aws.url}/{ACCOUNT}/missing", **self.aws.options)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        return [json.loads(message["Body"]) for message in drain(self.sqs, self.url)]


def test_configured_by_the_environment(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "from-env")
    entry = {"use": "sqs", "queue_url": url, **aws.options}
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps([entry]))
    report = publish(questions(2), "t-1")  # announce=None: the configured default
    assert report.ok, report.failures
    assert {d.announcer for d in report.deliveries} == {"sqs"}
    assert sorted(json.loads(m["Body"])["question_id"] for m in drain(sqs, url)) == ["q0", "q1"]
