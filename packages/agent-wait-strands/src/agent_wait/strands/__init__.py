"""agent-wait for Strands Agents: tool interrupts published as agent-wait envelopes.

Gate a tool, then let :func:`handle_message` run the host loop::

    from strands import Agent, ToolContext, tool
    from strands.session import FileSessionManager
    from agent_wait.core import WaitPolicy, announcer
    from agent_wait.strands import handle_message, wait

    @tool(context=True)
    @wait(WaitPolicy(timeout="P3D", default={"action": "reject"}))
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        return f"refunded {amount} on {order_id}"

    def agent_for(thread_id: str) -> Agent:
        return Agent(tools=[issue_refund], session_manager=FileSessionManager(
            session_id=thread_id, storage_dir="sessions"))

    handled = handle_message(agent_for, message, announcer("sqlite", path="inbox.sqlite3"))

A start message runs the agent; when ``issue_refund`` is called it parks on a Strands
interrupt and one ``wait.created`` envelope per question is published. The answer message
(``{**envelope["reply_with"], "answer": {"action": "approve"}}``) resumes it through a fresh
agent. See docs/frameworks/strands.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.strands._adapter import questions_in
    from agent_wait.strands._errors import MultiAgentRunFailed
    from agent_wait.strands._host import (
        ahandle_message,
        astream_message,
        handle_message,
        interrupt_responses,
        stream_message,
    )
    from agent_wait.strands._pause import pause_tool
    from agent_wait.strands._serve import StrandsServeOptions, aserve, serve
    from agent_wait.strands._wait import (
        apublish_interrupts,
        hitl,
        park,
        publish_interrupts,
        wait,
    )

__all__ = [
    "MultiAgentRunFailed",
    "StrandsServeOptions",
    "ahandle_message",
    "apublish_interrupts",
    "aserve",
    "astream_message",
    "handle_message",
    "hitl",
    "interrupt_responses",
    "park",
    "pause_tool",
    "publish_interrupts",
    "questions_in",
    "serve",
    "stream_message",
    "wait",
]

# Lazy: the entry-point plugin module lives in this package, and importing it must not import
# Strands (every agent-wait process loads the plugins, not every one uses Strands).
_HOMES = {
    "ahandle_message": "._host",
    "apublish_interrupts": "._wait",
    "aserve": "._serve",
    "StrandsServeOptions": "._serve",
    "handle_message": "._host",
    "hitl": "._wait",
    "interrupt_responses": "._host",
    "park": "._wait",
    "publish_interrupts": "._wait",
    "questions_in": "._adapter",
    "serve": "._serve",
    "wait": "._wait",
    "astream_message": "._host",
    "stream_message": "._host",
    "pause_tool": "._pause",
    "MultiAgentRunFailed": "._errors",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
