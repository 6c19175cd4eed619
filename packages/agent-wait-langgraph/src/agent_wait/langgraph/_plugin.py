"""Registers the LangGraph adapter with agent-wait (imports no LangGraph code until it is used)."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_adapters(register: RegisterTarget) -> None:
    """Register the ``langgraph`` adapter."""
    register("langgraph", "agent_wait.langgraph._adapter:LangGraphAdapter")
