"""agent-wait for Google ADK: tool confirmations published as agent-wait envelopes.

Gate a tool, then let :func:`handle_message` run the host loop::

    from google.adk.agents import LlmAgent
    from google.adk.runners import Runner
    from google.adk.sessions import DatabaseSessionService
    from google.adk.tools import ToolContext
    from agent_wait.core import WaitPolicy, announcer
    from agent_wait.google_adk import handle_message, wait

    @wait(WaitPolicy(timeout="P3D", default={"action": "reject"}))
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        return f"refunded {amount} on {order_id}"

    agent = LlmAgent(name="shop", model="gemini-2.5-flash", tools=[issue_refund])
    runner = Runner(app_name="shop", agent=agent, session_service=DatabaseSessionService(
        "sqlite+aiosqlite:///sessions.sqlite3"))
    handled = handle_message(runner, message, announcer("sqlite", path="inbox.sqlite3"))

A start message runs the agent in the ADK session named by its thread id; when
``issue_refund`` is called it parks on an ADK tool confirmation and one ``wait.created``
envelope per confirmation is published. ADK's own ``FunctionTool(..., require_confirmation=...)``
and ``tool_context.request_confirmation(hint=..., payload=...)`` park the same way. The answer
message goes back as the ``adk_request_confirmation`` function response and the run resumes.
A confirmed call runs at most once, across crashes: ``@wait`` keeps its record in the execution
ledger, and the host gives the runner :class:`AtMostOnce` for ADK's own confirmed tools.
See docs/frameworks/google-adk.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.google_adk._adapter import questions_in
    from agent_wait.google_adk._host import (
        ahandle_message,
        astream_message,
        handle_message,
        stream_message,
    )
    from agent_wait.google_adk._once import AtMostOnce
    from agent_wait.google_adk._serve import GoogleAdkServeOptions, aserve, serve
    from agent_wait.google_adk._wait import apublish_interrupts, hitl, publish_interrupts, wait

__all__ = [
    "AtMostOnce",
    "GoogleAdkServeOptions",
    "ahandle_message",
    "apublish_interrupts",
    "aserve",
    "astream_message",
    "handle_message",
    "hitl",
    "publish_interrupts",
    "questions_in",
    "serve",
    "stream_message",
    "wait",
]

# Lazy: the entry-point plugin module lives in this package, and importing it must not import
# ADK (every agent-wait process loads the plugins, not every one uses ADK).
_HOMES = {
    "AtMostOnce": "._once",
    "ahandle_message": "._host",
    "apublish_interrupts": "._wait",
    "aserve": "._serve",
    "GoogleAdkServeOptions": "._serve",
    "astream_message": "._host",
    "handle_message": "._host",
    "hitl": "._wait",
    "publish_interrupts": "._wait",
    "questions_in": "._adapter",
    "serve": "._serve",
    "stream_message": "._host",
    "wait": "._wait",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
