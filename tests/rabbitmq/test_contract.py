"""The core announcer conformance suite against the real RabbitMQ broker."""

from __future__ import annotations

from typing import Any

import pytest

from agent_wait.core import BaseAnnounce
from agent_wait.rabbitmq import RabbitMqAnnounce
from agent_wait.testing import AnnouncerContract

from .conftest import Broker


class TestRabbitMqAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _broker(self, amqp_url: str, broker: Broker, closed_port: int) -> None:
        self.url, self.broker = amqp_url, broker
        broker.declare("topic")
        self.queue = broker.queue("questions.#")
        self.seen: list[dict[str, Any]] = []
        self.refused = f"amqp://guest:guest@127.0.0.1:{closed_port}/"

    def make_announcer(self) -> BaseAnnounce:
        return RabbitMqAnnounce(
            self.url, exchange=self.broker.exchange, routing_key="questions.{tags[approver_group]}"
        )

    def make_failing_announcer(self) -> BaseAnnounce:
        return RabbitMqAnnounce(self.refused, exchange=self.broker.exchange, timeout=2)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        # Reading consumes: keep what earlier calls read.
        self.seen += [message.body for message in self.broker.drain(self.queue)]
        return list(self.seen)
