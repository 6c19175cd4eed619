"""agent-wait for the OpenAI Agents SDK: tool approvals published as agent-wait envelopes.

Gate a tool, then let :func:`handle_message` run the host loop::

    from agents import Agent
    from agent_wait.core import WaitPolicy, announcer
    from agent_wait.openai_agents import SqliteRuns, handle_message, wait

    @wait(WaitPolicy(timeout="P3D", default={"action": "reject"}))
    def issue_refund(order_id: str, amount: int) -> str:
        return f"refunded {amount} on {order_id}"

    agent = Agent("refunds", tools=[issue_refund])
    handled = handle_message(agent, message, announcer("sqlite", path="inbox.sqlite3"),
                             runs=SqliteRuns("runs.sqlite3"))

A start message runs the agent; when the model calls ``issue_refund`` the run parks on the
SDK's approval (``RunResult.interruptions``), its ``RunState`` is stored, and one
``wait.created`` envelope per pending call is published with the model's ``call_id`` as
question id. The answer message (``{**envelope["reply_with"], "answer": {"action":
"approve"}}``) restores the state, approves or rejects the call and resumes the run. Tools
with the SDK's own ``needs_approval`` are published too. See docs/frameworks/openai-agents.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.openai_agents._history import InMemoryRuns, RunStore, SqliteRuns, ThreadRecord
    from agent_wait.openai_agents._host import (
        ahandle_message,
        astream_message,
        handle_message,
        stream_message,
    )
    from agent_wait.openai_agents._postgres import PostgresRuns
    from agent_wait.openai_agents._questions import questions_in, wait
    from agent_wait.openai_agents._serve import OpenAIAgentsServeOptions, aserve, serve

__all__ = [
    "InMemoryRuns",
    "OpenAIAgentsServeOptions",
    "PostgresRuns",
    "RunStore",
    "SqliteRuns",
    "ThreadRecord",
    "ahandle_message",
    "aserve",
    "astream_message",
    "handle_message",
    "questions_in",
    "serve",
    "stream_message",
    "wait",
]

# Resolved on first access: importing the package does not import the OpenAI Agents SDK.
_MODULES = {
    "InMemoryRuns": "._history",
    "PostgresRuns": "._postgres",
    "RunStore": "._history",
    "SqliteRuns": "._history",
    "ThreadRecord": "._history",
    "ahandle_message": "._host",
    "aserve": "._serve",
    "OpenAIAgentsServeOptions": "._serve",
    "astream_message": "._host",
    "handle_message": "._host",
    "questions_in": "._questions",
    "serve": "._serve",
    "stream_message": "._host",
    "wait": "._questions",
}

__getattr__, __dir__ = lazy_exports(__name__, _MODULES, distribution="agent-wait-openai-agents")
