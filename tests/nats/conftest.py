"""NATS tests run against the machine's real NATS server with JetStream (CI starts it).

An unreachable server is a failure, never a skip. Every test gets its own stream and subject
prefix, deleted afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import nats
import nats.js.errors
import pytest
from nats.js import JetStreamContext

from tests.servers import unavailable

NATS_URL = "nats://127.0.0.1:4222"
T = TypeVar("T")


def with_jetstream(action: Callable[[JetStreamContext], Awaitable[T]]) -> T:
    """Run one admin action with a fresh client on a fresh loop (tests are sync)."""

    async def run() -> T:
        client = await nats.connect(NATS_URL, connect_timeout=3, max_reconnect_attempts=1)
        try:
            return await action(client.jetstream())
        finally:
            await client.close()

    return asyncio.run(run())


@dataclass
class Message:
    subject: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Stream:
    """A test's own JetStream stream, capturing ``<prefix>.>``."""

    name: str
    prefix: str

    def messages(self) -> list[Message]:
        """Every message the stream holds, in order."""

        async def read(js: JetStreamContext) -> list[Message]:
            import json

            state = (await js.stream_info(self.name)).state
            found: list[Message] = []
            for seq in range(state.first_seq, state.last_seq + 1) if state.messages else ():
                raw = await js.get_msg(self.name, seq)
                assert raw.subject is not None
                assert raw.data is not None
                found.append(Message(raw.subject, dict(raw.headers or {}), json.loads(raw.data)))
            return found

        return with_jetstream(read)


@pytest.fixture(scope="session")
def nats_url() -> str:
    """The server's URL, after checking that it answers with JetStream enabled."""

    async def check(js: JetStreamContext) -> None:
        await js.account_info()

    try:
        with_jetstream(check)
    except Exception as error:
        unavailable(
            f"NATS at {NATS_URL}",
            4222,
            error,
            start="start nats-server -js",
            prepare="the server is up: restart it with JetStream enabled (nats-server -js)",
        )
    return NATS_URL


def unique() -> str:
    return uuid.uuid4().hex[:12]


@pytest.fixture
def stream(nats_url: str) -> Iterator[Stream]:
    made = Stream(name=f"AW_TEST_{unique()}", prefix=f"awtest.{unique()}")

    async def create(js: JetStreamContext) -> None:
        await js.add_stream(name=made.name, subjects=[f"{made.prefix}.>"])

    with_jetstream(create)
    yield made
    drop_stream(made.name)


def drop_stream(name: str) -> None:
    async def delete(js: JetStreamContext) -> None:
        # A test that never connected (one checking only the options) made nothing.
        with contextlib.suppress(nats.js.errors.NotFoundError):
            await js.delete_stream(name)

    with_jetstream(delete)


class Admin:
    """What tests do to the server besides announcing: run a JetStream action, drop a stream."""

    run = staticmethod(with_jetstream)
    drop = staticmethod(drop_stream)


@pytest.fixture
def admin(nats_url: str) -> Admin:
    return Admin()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound (so nobody else takes it), not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
