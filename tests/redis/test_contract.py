"""The core announcer conformance suite against the real Redis, with and without the index."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from agent_wait.core import BaseAnnounce
from agent_wait.redis import RedisAnnounce
from agent_wait.testing import AnnouncerContract


class TestRedisAnnounce(AnnouncerContract):
    index = False

    @pytest.fixture(autouse=True)
    def _redis(
        self, redis_url: str, client: redis.Redis, names: tuple[str, str], closed_port: int
    ) -> None:
        self.url, self.client = redis_url, client
        self.stream, self.prefix = names
        self.refused = f"redis://127.0.0.1:{closed_port}/0"

    def make_announcer(self) -> BaseAnnounce:
        return RedisAnnounce(
            self.url, stream=self.stream, index=self.index, index_prefix=self.prefix
        )

    def make_failing_announcer(self) -> BaseAnnounce:
        return RedisAnnounce(self.refused, stream=self.stream, timeout=2)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        return [json.loads(fields["envelope"]) for _, fields in self.client.xrange(self.stream)]


class TestRedisAnnounceIndexed(TestRedisAnnounce):
    """The same contract with the per-question hash (republishes absorbed)."""

    index = True
