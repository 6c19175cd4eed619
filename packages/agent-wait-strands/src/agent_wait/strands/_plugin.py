"""Registers the Strands adapter with agent-wait (imports no Strands code until it is used)."""

from __future__ import annotations

from agent_wait.core import hookimpl
from agent_wait.core.hookspecs import RegisterTarget


@hookimpl
def register_adapters(register: RegisterTarget) -> None:
    """Register the ``strands`` adapter."""
    register("strands", "agent_wait.strands._adapter:StrandsAdapter")
