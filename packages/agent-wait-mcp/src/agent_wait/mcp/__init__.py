"""The ``agent_wait`` MCP tool: a bounded, observable pause inside an agent's tool loop.

Run the server (stdio by default, ``--http`` for streamable HTTP on 127.0.0.1:8000)::

    agent-wait-mcp
    agent-wait-mcp --http --port 8000

Limits come from ``AGENT_WAIT_ENABLED``, ``AGENT_WAIT_MAX_SECONDS_PER_CALL``,
``AGENT_WAIT_MAX_SECONDS_PER_TURN``, ``AGENT_WAIT_MAX_CALLS_PER_TURN``,
``AGENT_WAIT_HEARTBEAT_INTERVAL_MS``, ``AGENT_WAIT_RATE_LIMIT_PER_USER_PER_MINUTE`` and
``CHAT_AGENT_TURN_TIMEOUT_MS``. The policy lives in :mod:`agent_wait.core.pause` (re-exported
here), which the framework packages' native pause tools share::

    from agent_wait.mcp import PauseLimits, PausePolicy, build_server

    server = build_server(PausePolicy(PauseLimits.from_env()))

Importing this package does not import the MCP SDK; ``build_server`` loads it on first use.
See the pause tool page of the documentation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports
from agent_wait.core.pause import (
    InvalidPauseRequest,
    PauseConfigError,
    PauseGrant,
    PauseLimits,
    PausePolicy,
    PauseRefused,
    PauseRequest,
)

if TYPE_CHECKING:
    from agent_wait.mcp._server import build_server

__all__ = [
    "InvalidPauseRequest",
    "PauseConfigError",
    "PauseGrant",
    "PauseLimits",
    "PausePolicy",
    "PauseRefused",
    "PauseRequest",
    "build_server",
]

# Lazy, so the policy (and the plugin module) can be imported without the MCP SDK.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "build_server": "._server",
    },
)
