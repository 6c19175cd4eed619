"""Registers the Pydantic AI adapter with agent-wait (imports no Pydantic AI code until it is used)."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_adapters(register: RegisterTarget) -> None:
    """Register the ``pydantic_ai`` adapter."""
    register("pydantic_ai", "agent_wait.pydantic_ai._adapter:PydanticAIAdapter")
