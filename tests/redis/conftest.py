"""Redis tests run against the machine's real Redis (CI starts it); unreachable is a failure."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import pytest
import redis

from tests.servers import unavailable

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The server's URL, after checking that it answers (fails, never skips, when it does not)."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as error:
        unavailable(
            f"Redis at {REDIS_URL}",
            6379,
            error,
            start="start redis-server",
            prepare="the server is up but does not answer PING without a password",
        )
    return REDIS_URL


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    """A plain client for reading back what the announcer wrote."""
    with redis.Redis.from_url(redis_url, decode_responses=True) as plain:
        yield plain


@pytest.fixture
def names(client: redis.Redis) -> Iterator[tuple[str, str]]:
    """A stream key and an index prefix unique to the test; every key under them is deleted after."""
    base = f"agent-wait-test:{uuid.uuid4().hex}"
    yield f"{base}:stream", f"{base}:question:"
    keys = list(client.scan_iter(match=f"{base}:*"))
    if keys:
        client.delete(*keys)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound (so nobody else takes it), not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
