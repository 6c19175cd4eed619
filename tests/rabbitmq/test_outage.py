"""Workers on the rabbitmq entry point ride out the broker going away twice."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from agent_wait.rabbitmq import RabbitMqEntry
from tests.outage import check_rides_out_outages
from tests.rabbitmq.test_entry import _drop  # pyright: ignore[reportPrivateUsage]


@pytest.fixture
def queue(amqp_url: str) -> Iterator[str]:
    name = f"agent-wait-test-outage-{uuid.uuid4().hex[:12]}"
    yield name
    _drop(amqp_url, name)


def test_workers_ride_out_rabbitmq_outages(
    amqp_url: str, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    def make_entry(port: int) -> RabbitMqEntry:
        return RabbitMqEntry(
            f"amqp://guest:guest@127.0.0.1:{port}/",
            queue=queue,
            visibility_timeout=20.0,
            timeout=2.0,
        )

    check_rides_out_outages(5672, make_entry, caplog)
