"""The errors agent-wait-a2a raises, each an ``AgentWaitError``: all of them in this one module."""

from __future__ import annotations

from agent_wait.core import AgentWaitError


class NotWaitingForInput(AgentWaitError, ValueError):
    """The task is not in ``input-required``: there is no question to ask or answer."""
