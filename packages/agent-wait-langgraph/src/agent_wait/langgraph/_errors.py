"""The errors agent-wait-langgraph raises, each an ``AgentWaitError``: all of them in this one module."""

from __future__ import annotations

from agent_wait.core import AgentWaitError


class InterruptRoutingError(AgentWaitError):
    """A bare ``interrupt()`` took the answer addressed to a ``@wait`` call in the same task.

    LangGraph hands ``interrupt()`` the task's answers by position; when the order of a task's
    calls changes between runs (tools in threads), a bare call can take a ``@wait`` call's
    answer. The ``@wait`` call raises this inside the task, so the run stops rather than go on
    without its answer. Keep bare ``interrupt()`` calls out of tasks that run ``@wait`` calls
    concurrently (another node, or ``create_agent``'s per-call tasks).
    """
