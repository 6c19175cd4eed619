"""Who a call is charged to and which turn it belongs to (``_meta`` keys, then fallbacks)."""

from __future__ import annotations

import pytest

from agent_wait.mcp import InvalidPauseRequest
from agent_wait.mcp._server import caller_identity


def test_host_supplied_user_and_turn() -> None:
    meta = {"agent-wait/user_id": "alice", "agent-wait/turn_id": "msg-42", "progress_token": 3}
    assert caller_identity(meta, "sess-1") == ("alice", "msg-42")


def test_user_falls_back_to_the_transport_session_then_anonymous() -> None:
    assert caller_identity({"agent-wait/turn_id": "t"}, "sess-1") == ("session:sess-1", "t")
    assert caller_identity({}, None) == ("anonymous", None)
    assert caller_identity(None, None) == ("anonymous", None)


@pytest.mark.parametrize("value", [7, "", "   ", "x" * 201, ["alice"]])
def test_malformed_meta_ids_are_rejected(value: object) -> None:
    with pytest.raises(InvalidPauseRequest) as info:
        caller_identity({"agent-wait/user_id": value}, None)
    assert info.value.field == "_meta.agent-wait/user_id"
    assert repr(value)[:50] in str(info.value)
