"""The agent_wait tool under 2026-07-28 as a multi round-trip call: state-only rounds, sealed."""

from __future__ import annotations

from pathlib import Path

import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp.test_server import LIMITS, MESSAGE, Server, _stdio, ids

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path: Path) -> Server:
    return _stdio(LIMITS, tmp_path / "stderr.log")


async def test_a_pause_without_progress_is_rounds_of_input_required_until_it_ends(
    server: Server,
) -> None:
    user, turn = ids()
    meta = {"agent-wait/user_id": user, "agent-wait/turn_id": turn}
    arguments = {"seconds": 1, "user_message": MESSAGE}
    rounds: list[types.InputRequiredResult] = []

    async with server.connect() as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.session.call_tool(
            "agent_wait", arguments, meta=meta, allow_input_required=True
        )
        while isinstance(result, types.InputRequiredResult):
            rounds.append(result)
            result = await client.session.call_tool(
                "agent_wait",
                arguments,
                meta=meta,
                request_state=result.request_state,
                allow_input_required=True,
            )

    # A round lasts one heartbeat interval (100 ms here), so a second's pause takes several.
    assert rounds
    for asked in rounds:
        assert asked.input_requests is None
        assert asked.request_state
        assert asked.meta is not None
        assert asked.meta["agent-wait/remaining_seconds"] >= 1
        assert "agent-wait/wait_until" in asked.meta
    assert isinstance(result, types.CallToolResult)
    assert not result.is_error
    data = result.structured_content
    assert data is not None
    # Admitted once, on the first round: one call and one second charged to the turn.
    assert (data["granted_seconds"], data["turn_calls_remaining"]) == (1, 2)
    assert data["turn_seconds_remaining"] == 2
    finished = await server.wait_for_audit(user, "outcome=completed")
    assert "requested=1 granted=1" in finished
    # One audit line for the whole pause, not one per round.
    assert len(server.audit(user)) == 1


async def test_a_forged_request_state_is_refused(server: Server) -> None:
    user, turn = ids()
    async with server.connect() as client:
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool(
                "agent_wait",
                {"seconds": 1, "user_message": MESSAGE},
                meta={"agent-wait/user_id": user, "agent-wait/turn_id": turn},
                request_state='{"grant": {"granted_seconds": 0}, "start": 0}',
                allow_input_required=True,
            )


async def test_the_sdk_client_drives_the_rounds_and_caps_still_refuse(server: Server) -> None:
    user, turn = ids()
    meta = {"agent-wait/user_id": user, "agent-wait/turn_id": turn}
    async with server.connect() as client:
        first = await client.call_tool(
            "agent_wait", {"seconds": 2, "user_message": MESSAGE}, meta=meta
        )
        second = await client.call_tool(
            "agent_wait", {"seconds": 2, "user_message": MESSAGE}, meta=meta
        )

    assert first.structured_content is not None
    assert first.structured_content["turn_seconds_remaining"] == 1
    # The per-turn budget (3 s) clips the second wait to what is left.
    assert second.structured_content is not None
    assert second.structured_content["granted_seconds"] == 1
    assert second.structured_content["clipped_by"] == "per_turn"
