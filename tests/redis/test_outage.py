"""Workers on the redis entry point ride out the server going away twice."""

from __future__ import annotations

import pytest

from agent_wait.redis import RedisEntry
from tests.outage import check_rides_out_outages


def test_workers_ride_out_redis_outages(
    redis_url: str, names: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    def make_entry(port: int) -> RedisEntry:
        return RedisEntry(
            f"redis://127.0.0.1:{port}/0",
            stream=names[0],
            visibility_timeout=20.0,
            poll_interval=0.5,
            timeout=2.0,
        )

    check_rides_out_outages(6379, make_entry, caplog)
