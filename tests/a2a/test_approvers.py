"""Who answers over A2A: each request's person, by bearer token, authorized like every answer path.

Two real processes on loopback: the README's agent served with a token for each person, and the
SDK's client sending with one token or another. The person who starts a task is its run's
starter and may not approve it; another may; a request without a known token answers nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types import TaskState

from agent_wait.a2a import a2a_app, agent_card
from agent_wait.core import Handled
from tests.a2a.test_bridge import asked, result, send

ROOT = Path(__file__).resolve().parents[2]
TOKENS = {"token-of-alice": "alice@example.com", "token-of-bob": "bob@example.com"}

Connect = Callable[[str | None], AbstractAsyncContextManager[Client]]


@pytest.fixture
def tokens_server() -> Iterator[str]:
    pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.a2a.refund_server", "--tokens", json.dumps(TOKENS)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip().isdigit(), f"the server did not start (exit {process.poll()})"
        yield f"http://127.0.0.1:{line.strip()}/"
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture
def connect(tokens_server: str) -> Connect:
    @asynccontextmanager
    async def as_holder(token: str | None) -> AsyncIterator[Client]:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(timeout=60, headers=headers) as http:
            a2a = await create_client(tokens_server, ClientConfig(httpx_client=http))
            try:
                yield a2a
            finally:
                await a2a.close()

    return as_holder


async def test_the_person_who_started_the_task_may_not_approve_it(connect: Connect) -> None:
    async with connect("token-of-bob") as bob, connect("token-of-alice") as alice:
        task = await send(bob, {"amount": 900})
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED

        refused = await send(bob, {"approved": True}, task)

        assert refused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert asked(refused)["refused"] == (
            "bob@example.com (api-token) may not answer it: they started the run that asked "
            "it, and its policy does not allow self-approval (allow_self_approval); nothing "
            "recorded or sent"
        )
        assert not refused.artifacts

        done = await send(alice, {"approved": True}, task)

        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert result(done) == {"amount": 900, "approved": True}


async def test_a_request_without_a_known_token_answers_nothing(connect: Connect) -> None:
    async with (
        connect("token-of-bob") as bob,
        connect("not-a-token") as stranger,
        connect(None) as anonymous,
        connect("token-of-alice") as alice,
    ):
        task = await send(bob, {"amount": 30})
        for caller in (stranger, anonymous):
            refused = await send(caller, {"approved": False}, task)
            assert refused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert asked(refused)["refused"].startswith(
                "the request has no known bearer token (Authorization: Bearer ...)"
            )
        done = await send(alice, {"approved": False}, task)
        assert result(done) == {"amount": 30, "approved": False}


async def test_the_answer_message_names_the_person_and_how_they_were_identified() -> None:
    langgraph = pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph")
    from tests.a2a.refund_server import readme_example

    namespace: dict[str, Any] = {}
    exec(compile(readme_example(), "README.md", "exec"), namespace)
    received: list[dict[str, Any]] = []

    async def handle(message: Mapping[str, Any]) -> Handled:
        received.append(dict(message))
        return await langgraph.ahandle_message(namespace["graph"], message, announce=[])

    url = "http://agent.test/"
    app = a2a_app(handle, agent_card("refunds", url), tokens=TOKENS)
    transport = httpx.ASGITransport(app=app)

    async def as_holder(token: str) -> Client:
        http = httpx.AsyncClient(
            transport=transport, base_url=url, headers={"Authorization": f"Bearer {token}"}
        )
        return await create_client(url, ClientConfig(httpx_client=http))

    bob, alice = await as_holder("token-of-bob"), await as_holder("token-of-alice")
    try:
        task = await send(bob, {"amount": 12})
        done = await send(alice, {"approved": True}, task)
    finally:
        await bob.close()
        await alice.close()
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    start, reply = received
    assert start["started_by"] == "bob@example.com"
    assert (reply["answered_by"], reply["identity_source"]) == ("alice@example.com", "api-token")
