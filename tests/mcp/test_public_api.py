"""The public surface of agent_wait.mcp, and that importing it stays free of the MCP SDK."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import agent_wait.mcp


def test_public_api() -> None:
    assert sorted(agent_wait.mcp.__all__) == [
        "ELICIT_ACTIONS",
        "ElicitationBridge",
        "InputRequestRefused",
        "InputRoundsExceeded",
        "InvalidPauseRequest",
        "MCP_KEY",
        "PauseConfigError",
        "PauseGrant",
        "PauseLimits",
        "PausePolicy",
        "PauseRefused",
        "PauseRequest",
        "REQUEST_STATE_LIMIT",
        "answer_schema",
        "build_server",
        "elicit_result",
        "elicitation_question",
        "elicitation_value",
        "retry_with_answer",
    ]
    for name in agent_wait.mcp.__all__:
        assert getattr(agent_wait.mcp, name).__doc__, name


def test_importing_the_package_and_plugin_does_not_import_the_sdk() -> None:
    # A fresh interpreter: this test process may already have imported mcp elsewhere.
    code = (
        "import sys, agent_wait.mcp, agent_wait.mcp._plugin; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_build_server_is_loaded_lazily() -> None:
    from agent_wait.mcp._server import build_server

    assert agent_wait.mcp.build_server is build_server


def test_entry_point_and_console_script_are_declared() -> None:
    (plugin,) = [ep for ep in entry_points(group="agent_wait") if ep.name == "mcp"]
    assert plugin.value == "agent_wait.mcp._plugin"
    assert plugin.load().__doc__
    (script,) = [ep for ep in entry_points(group="console_scripts") if ep.name == "agent-wait-mcp"]
    assert script.value == "agent_wait.mcp._server:main"
