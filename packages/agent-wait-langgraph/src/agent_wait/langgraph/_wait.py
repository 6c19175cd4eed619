"""``@wait`` for LangGraph nodes, tools and the functions they call; ``publish_interrupts``."""

from __future__ import annotations

import inspect
from typing import Any, cast

from agent_wait.host.adapter import WaitDecorator, make_publish_interrupts, make_wait
from agent_wait.langgraph._adapter import LangGraphAdapter, check_not_a_tool
from agent_wait.langgraph._routing import run_once

ADAPTER = LangGraphAdapter()


def _checked(function: object, decision: str) -> None:
    # Both mistakes would otherwise surface only when the graph first calls the function.
    check_not_a_tool(function)  # a LangChain tool is not callable: it would pass as a policy
    if not callable(function):
        return
    param = inspect.signature(function).parameters.get(decision)
    if param is not None and param.default is inspect.Parameter.empty:
        # The parameter is hidden from the tool schema and from LangGraph, so nobody passes it:
        # the call binds only with a default (which a call that runs without asking receives).
        raise TypeError(
            f"@wait(decision={decision!r}) on {getattr(function, '__name__', function)!r}: give the {decision!r} "
            f"parameter a default (e.g. `{decision}: Any = None`); LangGraph calls it without one"
        )


_WAIT_DOC = """Ask a human before a LangGraph node, tool or helper function runs.

Works bare (``@wait``) or called, on sync and async functions. On a LangChain tool put it
below ``@tool``; in a node, call the decorated function from the node (or decorate the node
function itself)::

    @tool
    @wait(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))
    def issue_refund(order_id: str, amount: int) -> str: ...

Parameters LangGraph or LangChain inject (``config``, ``runtime``, ``store``, ``writer``,
``InjectedState``/``InjectedToolCallId`` arguments, ``ToolRuntime``) are never published.

Args:
    policy: The :class:`~agent_wait.core.WaitPolicy` (or a mapping of its fields); None for
        the default policy.
    mode: ``"interrupt"``: the call parks on LangGraph's ``interrupt()`` (the graph needs a
        checkpointer); the host publishes it (:func:`publish_interrupts` or
        :func:`handle_message`) and the question id is ``Interrupt.id``. On resume LangGraph
        runs the node again from the start and the call receives the answer. ``"async"``:
        the call publishes its question itself under ``sha256(thread_id | function |
        args)`` (``thread_id`` from the run config) and returns ``{"status":
        "pending_approval", "question_id", "function"}`` without running.
    announce: Where async mode publishes (required there).
    decision: The name of a parameter (hidden from tool schemas; give it a default) that
        receives the whole answer; the body then always runs. Without one,
        ``{"action": "approve"}`` runs the body, ``{"action": "approve", "args": {...}}``
        runs it with those arguments, and anything else is returned in its place.
    when: A predicate over the published arguments; False runs the body without asking. It
        runs again on resume, so it must be deterministic; if it raises, the call asks.
    clock: Returns "now" (aware), for ``expires_at`` in async mode.

Returns:
    The decorated function, or a decorator.

Raises:
    TypeError: ``@wait`` was put above ``@tool``, or the decision parameter has no default.
"""

_core_wait = make_wait(ADAPTER, check=_checked)


def _once(decorated: Any) -> Any:
    # Interrupt mode only: an async-mode call never parks, so it has no answer entry to keep.
    state = getattr(decorated, "__agent_wait__", None)
    if state is None or getattr(state, "mode", None) != "interrupt":
        return decorated
    return run_once(decorated)


def _wait(policy: Any = None, /, **options: Any) -> Any:
    made = _core_wait(policy, **options)
    if hasattr(made, "__agent_wait__"):  # bare @wait: made is the decorated function
        return _once(made)

    def decorator(function: Any) -> Any:
        return _once(made(function))

    return decorator


_wait.__doc__ = _WAIT_DOC
wait = cast("WaitDecorator", _wait)

hitl = wait
"""Alias of :func:`wait`."""

publish_interrupts, apublish_interrupts = make_publish_interrupts(ADAPTER)
publish_interrupts.__doc__ = """Publish the questions a LangGraph run is parked on.

This is the host's ``publish_interrupts(result, thread_id, announce)`` step; use
:func:`handle_message` for the whole host with its guarantees.

Args:
    result: The ``invoke()`` dict (``"__interrupt__"``), a ``GraphOutput`` (``version="v2"``), a
        ``StateSnapshot`` or a list of ``Interrupt``; a finished run publishes nothing.
    thread_id: The thread the run was invoked with.
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
