"""The ``agent_wait`` pause tool's policy, shared by the MCP server and the framework packages.

A chat agent calls ``agent_wait`` to pause **inside** its tool loop for a bounded number of
seconds. :class:`PausePolicy` admits, clips or refuses each wait against :class:`PauseLimits`
(per-call and per-turn caps, calls per turn, the turn's wall clock, a per-user rate limit and a
kill switch, from the ``AGENT_WAIT_*`` environment variables). :func:`pause` / :func:`apause`
run one call end to end (check, admit, wait, settle, audit) and return what the model reads,
sending :class:`PauseHeartbeat` progress beats to a ``heartbeat`` callback when given;
agent-wait-mcp serves the same policy over MCP with heartbeats. One policy per process::

    from agent_wait.pause import PauseLimits, PausePolicy, pause

    policy = PausePolicy(PauseLimits.from_env())
    result = pause(policy, {"seconds": 30, "user_message": "Waiting for the queue to drain."},
                   user="u-123", turn="msg-456")
"""

from __future__ import annotations

from agent_wait.pause._errors import (
    InvalidPauseRequest,
    PauseConfigError,
    PauseRefused,
    RefusalCode,
)
from agent_wait.pause._pause import (
    ANONYMOUS_USER,
    HEARTBEAT_TYPE,
    INPUT_SCHEMA,
    MAX_ID_LENGTH,
    MAX_REQUEST_SECONDS,
    MAX_TEXT_LENGTH,
    TOOL_NAME,
    ClipCause,
    Heartbeat,
    PauseGrant,
    PauseHeartbeat,
    PauseLimits,
    PausePolicy,
    PauseRequest,
    apause,
    audit_finished,
    audit_invalid,
    audit_refused,
    await_grant,
    checked_id,
    pause,
    pause_result,
    refusal_result,
    tool_description,
)

__all__ = [
    "ANONYMOUS_USER",
    "HEARTBEAT_TYPE",
    "INPUT_SCHEMA",
    "MAX_ID_LENGTH",
    "MAX_REQUEST_SECONDS",
    "MAX_TEXT_LENGTH",
    "TOOL_NAME",
    "ClipCause",
    "Heartbeat",
    "InvalidPauseRequest",
    "PauseConfigError",
    "PauseGrant",
    "PauseHeartbeat",
    "PauseLimits",
    "PausePolicy",
    "PauseRefused",
    "PauseRequest",
    "RefusalCode",
    "apause",
    "audit_finished",
    "audit_invalid",
    "audit_refused",
    "await_grant",
    "checked_id",
    "pause",
    "pause_result",
    "refusal_result",
    "tool_description",
]
