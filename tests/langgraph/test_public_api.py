"""The public API of agent_wait.langgraph and its plugin registration."""

from __future__ import annotations

import os
import subprocess
import sys

import agent_wait.langgraph
from agent_wait.host.adapter import FrameworkAdapter


def test_public_api_is_pinned() -> None:
    assert sorted(agent_wait.langgraph.__all__) == [
        "InterruptRoutingError",
        "LangGraphAdapter",
        "LangGraphServeOptions",
        "ahandle_message",
        "apublish_interrupts",
        "aserve",
        "astream_message",
        "handle_message",
        "hitl",
        "pause_tool",
        "publish_interrupts",
        "questions_in",
        "resume_command",
        "serve",
        "stream_message",
        "wait",
    ]
    for name in agent_wait.langgraph.__all__:
        assert getattr(agent_wait.langgraph, name).__doc__, name
    assert sorted(dir(agent_wait.langgraph)) == sorted(set(dir(agent_wait.langgraph)))


def test_hitl_is_wait_and_the_adapter_fits_the_protocol() -> None:
    assert agent_wait.langgraph.hitl is agent_wait.langgraph.wait
    adapter: FrameworkAdapter = agent_wait.langgraph.LangGraphAdapter()
    assert adapter.name == "langgraph"


def test_plugin_registers_the_adapter_without_importing_langgraph() -> None:
    # A fresh interpreter: this one has imported langgraph already.
    code = """
import sys
from agent_wait.core._plugins import registry
reg = registry()
reg.load(["langgraph"])
registration = reg.adapters["langgraph"]
assert registration.plugin == "langgraph", registration
assert registration.distribution == "agent-wait-langgraph", registration
assert "langgraph" not in sys.modules, "the plugin module imported langgraph"
assert "langchain_core" not in sys.modules, "the plugin module imported langchain_core"
adapter = registration.resolve()()
assert adapter.name == "langgraph"
assert "langgraph" in sys.modules
print("ok")
"""
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
