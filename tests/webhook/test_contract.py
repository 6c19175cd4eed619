"""The core announcer conformance suite, against the real scripted HTTP server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_wait.core import BaseAnnounce
from agent_wait.testing import AnnouncerContract
from agent_wait.webhook import WebhookAnnounce, verify

from .conftest import SECRET, Receiver, Step


class TestWebhookAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _server(self, receiver: Receiver, closed_port: int) -> None:
        self.server = receiver
        self.url = receiver.script("/contract")
        self.refused = f"http://127.0.0.1:{closed_port}/contract"

    def make_announcer(self) -> BaseAnnounce:
        return WebhookAnnounce(self.url, secret=SECRET)

    def make_failing_announcer(self) -> BaseAnnounce:
        return WebhookAnnounce(self.refused, retries=1, backoff=0.01)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        requests = self.server.requests("/contract")
        for request in requests:
            assert verify(request.body, request.headers, SECRET) == json.loads(request.body)
        return [json.loads(request.body) for request in requests]


class TestWebhookAnnounceAgainstA503(AnnouncerContract):
    """Failure reporting when the receiver answers, but with an error."""

    @pytest.fixture(autouse=True)
    def _server(self, receiver: Receiver) -> None:
        self.url = receiver.script("/ok")
        self.failing = receiver.script("/down", Step(503))

    def make_announcer(self) -> BaseAnnounce:
        return WebhookAnnounce(self.url)

    def make_failing_announcer(self) -> BaseAnnounce:
        return WebhookAnnounce(self.failing, retries=1, backoff=0.01)
