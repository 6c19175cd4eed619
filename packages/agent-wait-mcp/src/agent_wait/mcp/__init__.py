"""MCP for agent-wait: the ``agent_wait`` pause tool, and MCP elicitations as questions.

Client side: :class:`ElicitationBridge` makes an agent's MCP tool calls; an elicitation the
server makes during a call (a 2026-07-28 ``InputRequiredResult`` or an older
``elicitation/create`` request) becomes an agent-wait question the run parks on with the
framework's interrupt, and its answer goes back to the server::

    from langgraph.types import interrupt
    from mcp.client import Client
    from agent_wait.mcp import ElicitationBridge

    bridge = ElicitationBridge(interrupt, server="booking")
    result = await bridge.call_tool(Client(params), "book_room", {"city": "Oslo"})

Server side, the ``agent_wait`` tool: a bounded, observable pause inside an agent's tool loop.

Run the server (stdio by default, ``--http`` for streamable HTTP on 127.0.0.1:8000)::

    agent-wait-mcp
    agent-wait-mcp --http --port 8000

Limits come from ``AGENT_WAIT_ENABLED``, ``AGENT_WAIT_MAX_SECONDS_PER_CALL``,
``AGENT_WAIT_MAX_SECONDS_PER_TURN``, ``AGENT_WAIT_MAX_CALLS_PER_TURN``,
``AGENT_WAIT_HEARTBEAT_INTERVAL_MS``, ``AGENT_WAIT_RATE_LIMIT_PER_USER_PER_MINUTE`` and
``CHAT_AGENT_TURN_TIMEOUT_MS``. The policy lives in :mod:`agent_wait.pause` (re-exported
here), which the framework packages' native pause tools share::

    from agent_wait.mcp import PauseLimits, PausePolicy, build_server

    server = build_server(PausePolicy(PauseLimits.from_env()))

Importing this package does not import the MCP SDK; ``build_server`` loads it on first use.
See the pause tool page of the documentation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports
from agent_wait.pause import (
    InvalidPauseRequest,
    PauseConfigError,
    PauseGrant,
    PauseLimits,
    PausePolicy,
    PauseRefused,
    PauseRequest,
)

if TYPE_CHECKING:
    from agent_wait.mcp._client import (
        ELICIT_ACTIONS,
        MCP_KEY,
        REQUEST_STATE_LIMIT,
        ElicitationBridge,
        answer_schema,
        elicit_result,
        elicitation_question,
        elicitation_value,
        retry_with_answer,
    )
    from agent_wait.mcp._errors import InputRequestRefused, InputRoundsExceeded
    from agent_wait.mcp._server import build_server

__all__ = [
    "ELICIT_ACTIONS",
    "MCP_KEY",
    "REQUEST_STATE_LIMIT",
    "ElicitationBridge",
    "InputRequestRefused",
    "InputRoundsExceeded",
    "InvalidPauseRequest",
    "PauseConfigError",
    "PauseGrant",
    "PauseLimits",
    "PausePolicy",
    "PauseRefused",
    "PauseRequest",
    "answer_schema",
    "build_server",
    "elicit_result",
    "elicitation_question",
    "elicitation_value",
    "retry_with_answer",
]

# Lazy, so the policy (and the plugin module) can be imported without the MCP SDK.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ELICIT_ACTIONS": "._client",
        "MCP_KEY": "._client",
        "REQUEST_STATE_LIMIT": "._client",
        "ElicitationBridge": "._client",
        "answer_schema": "._client",
        "elicit_result": "._client",
        "elicitation_question": "._client",
        "elicitation_value": "._client",
        "retry_with_answer": "._client",
        "InputRequestRefused": "._errors",
        "InputRoundsExceeded": "._errors",
        "build_server": "._server",
    },
)
