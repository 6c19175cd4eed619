"""The conformance kit on a publish/subscribe transport (Redis PUBLISH), read back by a callback thread.

A subscriber sees only what is published after it subscribed, and sees it a little later than
the publish returns. So the reader subscribes before the announcer exists, and ``received()``
waits for in-flight messages before answering. Run it against a local Redis:
``pytest docs/examples/plugin_pubsub_contract.py``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from agent_wait.core import AnnouncerOptions, BaseAnnounce, WaitEnvelope
from agent_wait.core.options import SensitiveUrl, Text
from agent_wait.testing import AnnouncerContract

REDIS_URL = "redis://127.0.0.1:6379/0"


class ChannelOptions(AnnouncerOptions):
    """What configuration may set: one field per constructor argument."""

    url: SensitiveUrl
    channel: Text


class ChannelAnnounce(BaseAnnounce):
    """Publishes each envelope body on a Redis channel."""

    name = "redis_channel"
    options_model = ChannelOptions

    def __init__(self, url: str, channel: str) -> None:
        options = ChannelOptions.parse(self.name, {"url": url, "channel": channel})
        self.channel = options.channel
        self.client = redis.Redis.from_url(options.url, socket_timeout=2, socket_connect_timeout=2)

    def deliver(self, envelope: WaitEnvelope) -> None:
        self.client.publish(self.channel, envelope.to_json())

    def close(self) -> None:
        self.client.close()


class Collector:
    """Subscribes on a network thread of redis-py's own; its callback only appends, under a lock."""

    def __init__(self, url: str, channel: str) -> None:
        self._lock = threading.Lock()
        self._bodies: list[dict[str, Any]] = []
        self._last = time.monotonic()
        self._pubsub = redis.Redis.from_url(url).pubsub()
        self._pubsub.subscribe(**{channel: self._on_message})
        # Wait for the server's subscribe confirmation: before it, publishes are not seen.
        self._pubsub.get_message(timeout=5)
        self._thread = self._pubsub.run_in_thread(sleep_time=0.01, daemon=True)

    def _on_message(self, message: dict[str, Any]) -> None:
        # Runs on the network thread: hold the lock only to append, never across a blocking call.
        body = json.loads(message["data"])
        with self._lock:
            self._bodies.append(body)
            self._last = time.monotonic()

    def settled(self, quiet: float = 1.0, limit: float = 10.0) -> list[dict[str, Any]]:
        """Every body so far, once nothing new has arrived for ``quiet`` seconds.

        Quiet is counted from this call at the earliest: a message published just before it
        may still be on its way, later on a busy machine.
        """
        asked = time.monotonic()
        deadline = asked + limit
        while time.monotonic() < deadline:
            with self._lock:
                if time.monotonic() - max(self._last, asked) >= quiet:
                    return list(self._bodies)
            time.sleep(0.05)
        with self._lock:
            return list(self._bodies)

    def close(self) -> None:
        self._thread.stop()
        self._thread.join(timeout=5)
        self._pubsub.close()


class TestChannelAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _collector(self) -> Iterator[None]:
        self.channel = f"questions-{uuid.uuid4().hex}"
        self.collector = Collector(REDIS_URL, self.channel)
        yield
        self.collector.close()

    def make_announcer(self) -> BaseAnnounce:
        return ChannelAnnounce(REDIS_URL, self.channel)

    def make_failing_announcer(self) -> BaseAnnounce:
        return ChannelAnnounce("redis://127.0.0.1:1/0", self.channel)  # nothing listens there

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        # The kit calls this right after publishing: wait for the messages still in flight.
        return self.collector.settled()
