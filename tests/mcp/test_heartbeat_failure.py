"""Fault injection a real client cannot produce on demand: the progress channel breaks mid-wait."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import mcp.types as types
import pytest

from agent_wait.mcp import PauseLimits, PausePolicy
from agent_wait.mcp._server import _AgentWaitHandlers  # pyright: ignore[reportPrivateUsage]


@dataclass
class BrokenSession:
    attempts: int = 0

    async def send_notification(self, notification: Any, related_request_id: Any = None) -> None:
        self.attempts += 1
        raise ConnectionResetError("client went away")


@dataclass
class FakeRequestContext:
    session: BrokenSession
    meta: dict[str, Any] = field(default_factory=lambda: {"progress_token": 7})
    request: Any = None
    request_id: int = 1
    protocol_version: str = "2026-07-28"


async def test_failed_heartbeat_does_not_end_the_wait(caplog: pytest.LogCaptureFixture) -> None:
    policy = PausePolicy(PauseLimits(heartbeat_interval_ms=100))
    session = BrokenSession()
    params = types.CallToolRequestParams(
        name="agent_wait", arguments={"seconds": 1, "user_message": "Waiting for the queue."}
    )
    with caplog.at_level(logging.INFO, logger="agent_wait.mcp"):
        result = await _AgentWaitHandlers(policy).call_tool(
            FakeRequestContext(session),  # type: ignore[arg-type]
            params,
        )

    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["waited_seconds"] >= 1
    assert session.attempts == 1  # heartbeats stop after the first failure; the wait goes on
    assert any(
        "heartbeat failed" in r.getMessage() and r.name.startswith("agent_wait.mcp")
        for r in caplog.records
    )
    assert any("outcome=completed user='anonymous'" in r.getMessage() for r in caplog.records)
