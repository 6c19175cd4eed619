"""The core announcer conformance suite against the real NATS JetStream server."""

from __future__ import annotations

from typing import Any

import pytest

from agent_wait.core import BaseAnnounce
from agent_wait.nats import NatsAnnounce
from agent_wait.testing import AnnouncerContract


class TestNatsAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _server(self, nats_url: str, stream: Any, closed_port: int) -> None:
        self.url, self.stream = nats_url, stream
        self.refused = f"nats://127.0.0.1:{closed_port}"

    def make_announcer(self) -> BaseAnnounce:
        subject = self.stream.prefix + ".questions.{tags[approver_group]}"
        return NatsAnnounce(self.url, subject=subject, stream=self.stream.name)

    def make_failing_announcer(self) -> BaseAnnounce:
        return NatsAnnounce(self.refused, subject=self.stream.prefix + ".questions", timeout=2)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        return [message.body for message in self.stream.messages()]
