"""A real A2A server process on loopback, and the SDK's client talking to it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server_url() -> Iterator[str]:
    """The README's refund agent in its own process; its URL."""
    # `nox -s tests_package` runs this directory with agent-wait-a2a alone
    pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.a2a.refund_server"],
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
async def client(server_url: str) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=60) as http:
        a2a = await create_client(server_url, ClientConfig(httpx_client=http))
        try:
            yield a2a
        finally:
            await a2a.close()
