"""``@wait`` and ``park`` for Strands tools, and ``publish_interrupts`` for Strands results."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from agent_wait.core import derive_question_id
from agent_wait.host.adapter import PAYLOAD_KEY, make_publish_interrupts, make_wait
from agent_wait.strands._adapter import StrandsAdapter, has_tool_context, interrupt_name
from strands.types.tools import AgentTool, ToolContext

_ADAPTER = StrandsAdapter()


def _checked(function: object, decision: str) -> None:
    # These mistakes would otherwise surface only when the model first calls the tool.
    if isinstance(function, AgentTool):
        raise TypeError(
            f"@wait was applied to the Strands tool {function.tool_name!r}; put it below @tool: "
            "@tool(context=True) then @wait(...) then def ..."
        )
    if not callable(function):
        return
    signature = inspect.signature(function)
    if not has_tool_context(signature):
        raise TypeError(
            f"@wait on {getattr(function, '__name__', function)!r} needs the Strands ToolContext to "
            "park: add a `tool_context: ToolContext` parameter and decorate with @tool(context=True)"
        )
    param = signature.parameters.get(decision)
    if param is not None and param.default is inspect.Parameter.empty:
        # The parameter is hidden from the model, so Strands never passes it: the call binds
        # only with a default (and a call that runs without asking receives that default).
        raise TypeError(
            f"@wait(decision={decision!r}) on {getattr(function, '__name__', function)!r}: give the {decision!r} "
            f"parameter a default (e.g. `{decision}: Any = None`); Strands calls the tool without it"
        )


_WAIT_DOC = """Ask a human before a Strands tool runs.

Use it below ``@tool(context=True)``; the tool needs a ``tool_context: ToolContext``
parameter, which is never published::

    @tool(context=True)
    @wait(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str: ...

Works bare (``@wait``) or called, on sync and async tools.

Args:
    policy: The :class:`~agent_wait.core.WaitPolicy` (or a mapping of its fields); None for
        the default policy.
    mode: ``"interrupt"``: the call parks with ``tool_context.interrupt("agent_wait:<function>",
        reason=<payload>)``, the run returns ``stop_reason == "interrupt"`` and the host
        publishes it (:func:`publish_interrupts` or :func:`handle_message`); the question id
        is the Strands ``Interrupt.id``. ``"async"``: the call publishes its question itself
        under ``sha256(agent.session_id | function | args)`` and returns ``{"status":
        "pending_approval", "question_id", "function"}`` to the model without running.
    announce: Where async mode publishes (required there).
    decision: The name of a parameter (hidden from the model) that receives the whole
        answer; the body then always runs. Without one, ``{"action": "approve"}`` runs the
        body, ``{"action": "approve", "args": {...}}`` runs it with those arguments, and
        anything else is returned to the model in its place.
    when: A predicate over the published arguments; False runs the body without asking. It
        runs again on resume, so it must be deterministic; if it raises, the call asks.
    clock: Returns "now" (aware), for ``expires_at`` in async mode.
    once: True (the default): on an agent with a session manager, an approved body runs at
        most once across crashes (recorded in the execution ledger under the session, agent id,
        tool use id and function; a run killed inside it asks a person whether it happened).
        False keeps no record.
    ledger: The :class:`~agent_wait.core.ExecutionLedger` (None: beside the configured
        questions).

Returns:
    The decorated function, or a decorator.

Raises:
    TypeError: ``@wait`` was put above ``@tool``, the function has no ``ToolContext``
        parameter to park with, or its decision parameter has no default.
"""

wait = make_wait(_ADAPTER, check=_checked, doc=_WAIT_DOC)

hitl = wait
"""Alias of :data:`wait`."""

publish_interrupts, apublish_interrupts = make_publish_interrupts(_ADAPTER)
publish_interrupts.__doc__ = """Publish the questions a Strands run is parked on.

Args:
    result: The ``AgentResult`` of ``agent(...)``; nothing is published unless its
        ``stop_reason`` is ``"interrupt"``.
    thread_id: The conversation identity (the session id the agent was built with).
    announce: An announcer, several, a registered name, or None for the configured default.
    reply_to: A hint for where answers go, copied into every envelope.
    strict: Raise ``AnnounceFailed`` after every announcer was tried if any delivery failed.
    clock: Returns "now" (aware); ``expires_at`` is measured from it.

Returns:
    The :class:`~agent_wait.core.PublishReport`.
"""
apublish_interrupts.__doc__ = (
    "Async :func:`publish_interrupts` (announcers delivered to concurrently)."
)


def park(tool_context: ToolContext[Any], value: Mapping[str, Any]) -> Any:
    """Park the tool call on ``value``, a question built by code other than ``@wait``.

    Strands' counterpart of LangGraph's ``interrupt(value)``: ``value`` is a parked question
    (``agent_wait.host.adapter.wait_payload``, e.g. an MCP elicitation from ``agent_wait.mcp``).
    The first time it raises the Strands interrupt with ``value`` as its reason; the host
    publishes the question, and on resume the tool runs again and ``park`` returns the answer.
    The interrupt is named after the tool and the question, so one call may park on several
    different questions, each answered on its own.

    Raises:
        ValueError: ``value`` is not a parked question (no ``question`` and ``agent_wait``).
    """
    question: object = value.get("question")
    if question is None or not isinstance(value.get(PAYLOAD_KEY), Mapping):
        raise ValueError(
            f"value: not a parked question (needs 'question' and a {PAYLOAD_KEY!r} object, as "
            f"wait_payload builds); got keys {sorted(value)}"
        )
    tool = tool_context.tool_use["name"]
    # Strands derives the interrupt id from the tool call and the name: the same question asked
    # again on resume finds its response, a different one parks anew.
    asked = derive_question_id(tool, "park", {"question": question})[:16]
    return tool_context.interrupt(interrupt_name(f"{tool}:{asked}"), reason=dict(value))
