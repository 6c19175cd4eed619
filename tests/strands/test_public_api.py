"""The public API of agent_wait.strands and its plugin registration."""

from __future__ import annotations

import os
import subprocess
import sys

import agent_wait.strands


def test_public_api_is_pinned() -> None:
    assert sorted(agent_wait.strands.__all__) == [
        "MultiAgentRunFailed",
        "StrandsServeOptions",
        "ahandle_message",
        "apublish_interrupts",
        "aserve",
        "astream_message",
        "handle_message",
        "hitl",
        "interrupt_responses",
        "park",
        "pause_tool",
        "publish_interrupts",
        "questions_in",
        "serve",
        "stream_message",
        "wait",
    ]
    for name in agent_wait.strands.__all__:
        assert getattr(agent_wait.strands, name).__doc__, name


def test_hitl_is_wait() -> None:
    assert agent_wait.strands.hitl is agent_wait.strands.wait


def test_plugin_registers_the_adapter_without_importing_strands() -> None:
    # A fresh interpreter: this one has imported strands already.
    code = """
import sys
from agent_wait.core._plugins import registry
reg = registry()
reg.load(["strands"])
registration = reg.adapters["strands"]
assert registration.plugin == "strands", registration
assert registration.distribution == "agent-wait-strands", registration
assert "strands" not in sys.modules, "the plugin module imported strands"
adapter = registration.resolve()()
assert adapter.name == "strands"
assert "strands" in sys.modules
print("ok")
"""
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
