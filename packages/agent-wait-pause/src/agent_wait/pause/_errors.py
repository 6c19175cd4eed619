"""The errors the pause tool raises: every one an AgentWaitError (agent_wait.core)."""

from __future__ import annotations

from typing import Literal

from agent_wait.core._errors import AgentWaitError, ConfigError

RefusalCode = Literal[
    "disabled", "rate_limited", "calls_per_turn", "turn_timeout", "turn_budget_exhausted"
]
"""Why a wait was refused (also the ``agent-wait/refusal`` value the MCP tool returns)."""


class PauseConfigError(ConfigError):
    """A pause limit (an environment variable or a ``PauseLimits`` field) has an invalid value.

    The message names the variable or field and the offending value.
    """


class InvalidPauseRequest(AgentWaitError, ValueError):
    """A wait request is malformed (missing, wrongly typed or out-of-range field).

    Attributes:
        field: The name of the offending field, e.g. ``"seconds"``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class PauseRefused(AgentWaitError):
    """The policy refused a wait; the message tells the model what to do instead.

    Attributes:
        code: Which rule refused the wait.
        retry_after_seconds: For ``rate_limited``, when the next wait would be admitted.
    """

    def __init__(
        self, code: RefusalCode, message: str, retry_after_seconds: float | None = None
    ) -> None:
        super().__init__(message)
        self.code: RefusalCode = code
        self.retry_after_seconds = retry_after_seconds
