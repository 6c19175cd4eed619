"""``@wait`` for Google ADK tools, and ``publish_interrupts`` for ADK runs."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast

from google.adk.tools import BaseTool

from agent_wait.core import WaitPolicy
from agent_wait.google_adk._adapter import PARKED, GoogleAdkAdapter, Parked
from agent_wait.host.adapter import WaitDecorator, make_publish_interrupts, make_wait

_ADAPTER = GoogleAdkAdapter()


def _checked(function: object, decision: str) -> None:
    # These mistakes would otherwise surface only when the model first calls the tool.
    if isinstance(function, BaseTool):
        raise TypeError(
            f"@wait was applied to the ADK tool {function.name!r}; decorate the function, then "
            "make the tool: FunctionTool(wait(...)(function)), or list the function in tools="
        )
    if not callable(function):
        return
    signature = inspect.signature(function)
    if "tool_context" not in signature.parameters:
        raise TypeError(
            f"@wait on {getattr(function, '__name__', function)!r} needs the ADK ToolContext to "
            "park: add a `tool_context: ToolContext` parameter"
        )
    param = signature.parameters.get(decision)
    if param is not None and param.default is inspect.Parameter.empty:
        raise TypeError(
            f"@wait(decision={decision!r}) on {getattr(function, '__name__', function)!r}: give "
            f"the {decision!r} parameter a default (e.g. `{decision}: Any = None`); ADK calls the "
            "tool without it"
        )


_WAIT_DOC = """Ask a human before a Google ADK tool runs.

The function needs a ``tool_context: ToolContext`` parameter (ADK fills it in; it is never
published). List the decorated function in the agent's ``tools=`` or wrap it in
``FunctionTool``::

    @wait(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str: ...

Works bare (``@wait``) or called, on sync and async tools.

Args:
    policy: The :class:`~agent_wait.core.WaitPolicy` (or a mapping of its fields); None for
        the default policy.
    mode: ``"interrupt"``: the call parks with ``tool_context.request_confirmation(hint=...,
        payload=<parked value>)``; the run ends with an ``adk_request_confirmation`` call,
        whose id is the question id, and the host publishes it (:func:`publish_interrupts` or
        :func:`handle_message`). ``"async"``: the call publishes its question itself under
        ``sha256(session id | function | args)`` and returns ``{"status": "pending_approval",
        "question_id", "function"}`` to the model without running.
    announce: Where async mode publishes (required there).
    decision: The name of a parameter (hidden from the model) that receives the whole
        answer; the body then always runs. Without one, ``{"action": "approve"}`` runs the
        body, ``{"action": "approve", "args": {...}}`` runs it with those arguments, and
        anything else is returned to the model in its place.
    when: A predicate over the published arguments; False runs the body without asking.
    clock: Returns "now" (aware), for ``expires_at`` in async mode.
    once: True (the default): an approved body runs at most once, even when a worker dies
        inside it or ADK runs the tool again on a resume. It is recorded ``executing`` in the
        execution ledger (keyed on the session, the function and ADK's function call id)
        before it runs and ``done`` with its JSON result after; a run that finds ``done``
        returns the recorded result, one that finds ``executing`` runs nothing and asks a
        person whether the call happened (``{"action": "yes"}`` or ``{"action": "no"}``, a new
        confirmation). False: no record, ADK's own semantics.
    ledger: The execution ledger (None: ``agent_wait.core.configured_ledger()``).

Returns:
    The decorated function, or a decorator.

Raises:
    TypeError: ``@wait`` was put on a tool object, the function has no ``tool_context``
        parameter, or its decision parameter has no default.
"""

_wait = make_wait(_ADAPTER, check=_checked, doc=_WAIT_DOC)


def _parks(decorated: Callable[..., Any]) -> Callable[..., Any]:
    """``decorated``, returning :data:`PARKED` where the adapter raised :class:`Parked`."""
    if inspect.iscoroutinefunction(decorated):

        @functools.wraps(decorated)
        async def async_tool(*args: Any, **kwargs: Any) -> Any:
            try:
                return await decorated(*args, **kwargs)
            except Parked:
                return dict(PARKED)

        return async_tool

    @functools.wraps(decorated)
    def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return decorated(*args, **kwargs)
        except Parked:
            return dict(PARKED)

    return tool


def _adk_wait(policy: Any = None, /, **options: Any) -> Any:
    if callable(policy) and not isinstance(policy, WaitPolicy | Mapping):
        return _parks(cast("Callable[..., Any]", _wait(policy)))
    decorate = cast(
        "Callable[[Callable[..., Any]], Callable[..., Any]]",
        _wait(cast("WaitPolicy | Mapping[str, Any] | None", policy), **options),
    )

    def decorator(function: Callable[..., Any]) -> Callable[..., Any]:
        return _parks(decorate(function))

    return decorator


_adk_wait.__doc__ = _WAIT_DOC
wait = cast("WaitDecorator", _adk_wait)

hitl = wait
"""Alias of :data:`wait`."""

publish_interrupts, apublish_interrupts = make_publish_interrupts(_ADAPTER)
publish_interrupts.__doc__ = """Publish the confirmations an ADK run is parked on.

Args:
    result: The events of the run (what ``runner.run_async(...)`` yielded) or the session's
        ``events``; every ``adk_request_confirmation`` call not answered among them is published.
    thread_id: The conversation identity (the ADK session id).
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
