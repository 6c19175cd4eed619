"""The errors the client side of agent-wait-mcp raises, each an ``AgentWaitError``."""

from __future__ import annotations

from agent_wait.core import AgentWaitError


class InputRequestRefused(AgentWaitError, ValueError):
    """An MCP server's input request cannot become a question, or its answer a response.

    Raised for an input request other than an elicitation, a ``requestState`` larger than a
    question keeps, or an answer that is not an elicitation result.
    """


class InputRoundsExceeded(AgentWaitError, RuntimeError):
    """The server asked for input more times than the bridge's ``max_rounds`` allows."""
