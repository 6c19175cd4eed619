"""agent-wait for LangGraph: ``interrupt()`` questions published as agent-wait envelopes.

Gate a tool or a function a node calls, then let :func:`handle_message` be the host::

    from langchain_core.tools import tool
    from agent_wait.core import WaitPolicy, announcer
    from agent_wait.langgraph import handle_message, wait

    @tool
    @wait(WaitPolicy(timeout="P3D", default={"action": "reject"}))
    def issue_refund(order_id: str, amount: int) -> str:
        return f"refunded {amount} on {order_id}"

    graph = create_agent(model, [issue_refund], checkpointer=SqliteSaver(conn))
    handled = handle_message(graph, message, announcer("sqlite", path="inbox.sqlite3"))

A start message (``{"thread_id", "input"}``) runs the graph; when ``issue_refund`` is called
it parks on ``interrupt()`` and one ``wait.created`` envelope per question is published, with
``question_id`` = LangGraph's ``Interrupt.id``. The answer message
(``{**envelope["reply_with"], "answer": {"action": "approve"}}``) resumes it. Bare
``interrupt(value)`` calls and LangChain's ``HumanInTheLoopMiddleware`` are published too.
:func:`serve` runs ``handle_message`` for every message of an entry point (the worker). See
docs/frameworks/langgraph.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.langgraph._adapter import LangGraphAdapter, questions_in
    from agent_wait.langgraph._errors import InterruptRoutingError
    from agent_wait.langgraph._host import (
        ahandle_message,
        astream_message,
        handle_message,
        resume_command,
        stream_message,
    )
    from agent_wait.langgraph._pause import pause_tool
    from agent_wait.langgraph._serve import LangGraphServeOptions, aserve, serve
    from agent_wait.langgraph._wait import apublish_interrupts, hitl, publish_interrupts, wait

__all__ = [
    "InterruptRoutingError",
    "LangGraphAdapter",
    "LangGraphServeOptions",
    "ahandle_message",
    "apublish_interrupts",
    "aserve",
    "astream_message",
    "handle_message",
    "hitl",
    "pause_tool",
    "publish_interrupts",
    "questions_in",
    "resume_command",
    "serve",
    "stream_message",
    "wait",
]

# Lazy: the entry-point plugin module lives in this package, and importing it must not import
# LangGraph (every agent-wait process loads the plugins, not every one uses LangGraph).
_HOMES = {
    "InterruptRoutingError": "._errors",
    "LangGraphAdapter": "._adapter",
    "LangGraphServeOptions": "._serve",
    "ahandle_message": "._host",
    "apublish_interrupts": "._wait",
    "aserve": "._serve",
    "handle_message": "._host",
    "hitl": "._wait",
    "publish_interrupts": "._wait",
    "questions_in": "._adapter",
    "resume_command": "._host",
    "serve": "._serve",
    "wait": "._wait",
    "astream_message": "._host",
    "pause_tool": "._pause",
    "stream_message": "._host",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
