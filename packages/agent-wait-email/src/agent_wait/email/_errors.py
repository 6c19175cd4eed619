"""The errors agent-wait-email raises, each an ``AgentWaitError``: all of them in this one module."""

from __future__ import annotations

from agent_wait.core import AgentWaitError


class TokenRefused(AgentWaitError):
    """A link token that does not answer: forged, altered, expired or already used.

    Attributes:
        reason: ``"invalid"``, ``"expired"`` or ``"used"``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
