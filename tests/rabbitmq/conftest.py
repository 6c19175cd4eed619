"""RabbitMQ tests run against the machine's real broker (CI starts it); unreachable is a failure.

Every test gets its own exchange, deleted afterwards; its queues are exclusive, so the broker
deletes them when the test's connection closes.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pika
import pika.exceptions
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.servers import unavailable

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"


@dataclass
class Delivered:
    routing_key: str
    properties: pika.BasicProperties
    body: dict[str, Any]


@dataclass
class Broker:
    """A test's exchange and a channel to declare queues and read them."""

    channel: BlockingChannel
    exchange: str
    exchanges: list[str] = field(default_factory=list)

    def declare(self, kind: str = "topic", name: str | None = None) -> str:
        name = name or self.exchange
        self.channel.exchange_declare(name, kind, auto_delete=False)
        self.exchanges.append(name)
        return name

    def queue(self, *binding_keys: str, arguments: dict[str, Any] | None = None) -> str:
        """An exclusive queue bound to the exchange by each key."""
        name = self.channel.queue_declare("", exclusive=True, arguments=arguments).method.queue
        for key in binding_keys:
            self.channel.queue_bind(name, self.exchange, key)
        return name

    def drain(self, queue: str) -> list[Delivered]:
        """Every message waiting in ``queue``, acknowledged."""
        found: list[Delivered] = []
        while True:
            method, properties, body = self.channel.basic_get(queue, auto_ack=True)
            if method is None:
                return found
            found.append(Delivered(method.routing_key, properties, json.loads(body)))


@pytest.fixture(scope="session")
def amqp_url() -> str:
    """The broker's URL, after checking that it accepts a connection (fails, never skips)."""
    try:
        pika.BlockingConnection(pika.URLParameters(AMQP_URL)).close()
    except pika.exceptions.AMQPError as error:
        unavailable(
            "RabbitMQ at amqp://guest@127.0.0.1:5672/",
            5672,
            error,
            start="start rabbitmq-server",
            prepare="the broker is up: it must accept guest/guest on the default vhost",
        )
    return AMQP_URL


@pytest.fixture
def broker(amqp_url: str) -> Iterator[Broker]:
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    made = Broker(connection.channel(), f"agent-wait-test-{uuid.uuid4().hex[:12]}")
    try:
        yield made
    finally:
        channel = connection.channel()
        for name in {*made.exchanges, made.exchange}:
            channel.exchange_delete(name)
        connection.close()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound (so nobody else takes it), not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
