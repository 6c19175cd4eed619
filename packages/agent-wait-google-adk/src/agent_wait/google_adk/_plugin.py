"""Registers the Google ADK adapter with agent-wait (imports no ADK code until it is used)."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_adapters(register: RegisterTarget) -> None:
    """Register the ``google_adk`` adapter."""
    register("google_adk", "agent_wait.google_adk._adapter:GoogleAdkAdapter")
