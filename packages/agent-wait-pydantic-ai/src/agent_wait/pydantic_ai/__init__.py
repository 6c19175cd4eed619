"""agent-wait for Pydantic AI: deferred tool calls published as agent-wait envelopes.

Gate a tool, then let :func:`handle_message` run the host loop::

    from pydantic_ai import Agent, DeferredToolRequests, RunContext
    from agent_wait.core import WaitPolicy, announcer
    from agent_wait.pydantic_ai import SqliteHistory, handle_message, wait

    agent = Agent("openai:gpt-5", output_type=[str, DeferredToolRequests])

    @agent.tool
    @wait(WaitPolicy(timeout="P3D", default={"action": "reject"}))
    def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
        return f"refunded {amount} on {order_id}"

    handled = handle_message(agent, message, announcer("sqlite", path="inbox.sqlite3"),
                             history=SqliteHistory("history.sqlite3"))

A start message runs the agent; when ``issue_refund`` is called it raises
``ApprovalRequired`` and one ``wait.created`` envelope per deferred call is published, with
the ``tool_call_id`` as question id. The answer message
(``{**envelope["reply_with"], "answer": {"action": "approve"}}``) resumes the run from the
stored history. ``requires_approval=True`` tools and ``CallDeferred`` calls are published too.
See docs/frameworks/pydantic-ai.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.pydantic_ai._adapter import questions_in
    from agent_wait.pydantic_ai._history import (
        HistoryStore,
        IndexedHistoryStore,
        InMemoryHistory,
        SqliteHistory,
    )
    from agent_wait.pydantic_ai._host import (
        ahandle_message,
        astream_message,
        handle_message,
        stream_message,
    )
    from agent_wait.pydantic_ai._pause import PauseHeartbeatEvent, pause_tool
    from agent_wait.pydantic_ai._results import deferred_results
    from agent_wait.pydantic_ai._serve import aserve, serve
    from agent_wait.pydantic_ai._wait import (
        apublish_interrupts,
        hitl,
        park,
        publish_interrupts,
        wait,
    )

__all__ = [
    "HistoryStore",
    "InMemoryHistory",
    "IndexedHistoryStore",
    "PauseHeartbeatEvent",
    "SqliteHistory",
    "ahandle_message",
    "apublish_interrupts",
    "aserve",
    "astream_message",
    "deferred_results",
    "handle_message",
    "hitl",
    "park",
    "pause_tool",
    "publish_interrupts",
    "questions_in",
    "serve",
    "stream_message",
    "wait",
]

# Resolved on first access, so that loading the plugin (agent_wait.pydantic_ai._plugin, which
# imports this package first) does not import Pydantic AI.
_MODULES = {
    "HistoryStore": "._history",
    "InMemoryHistory": "._history",
    "SqliteHistory": "._history",
    "ahandle_message": "._host",
    "apublish_interrupts": "._wait",
    "aserve": "._serve",
    "deferred_results": "._results",
    "handle_message": "._host",
    "hitl": "._wait",
    "park": "._wait",
    "publish_interrupts": "._wait",
    "questions_in": "._adapter",
    "serve": "._serve",
    "wait": "._wait",
    "astream_message": "._host",
    "stream_message": "._host",
    "pause_tool": "._pause",
    "PauseHeartbeatEvent": "._pause",
    "IndexedHistoryStore": "._history",
}

__getattr__, __dir__ = lazy_exports(__name__, _MODULES, distribution="agent-wait-pydantic-ai")
