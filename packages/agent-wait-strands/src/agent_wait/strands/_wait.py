"""``@wait`` for Strands tools, and ``publish_interrupts`` for Strands results."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar, cast, overload

from agent_wait.core import Announce, WaitPolicy, make_publish_interrupts, make_wait
from agent_wait.strands._adapter import StrandsAdapter, has_tool_context
from strands.types.tools import AgentTool

F = TypeVar("F", bound=Callable[..., Any])

_ADAPTER = StrandsAdapter()
_core_wait = make_wait(_ADAPTER)


def _checked(function: Callable[..., Any], decision: str) -> Callable[..., Any]:
    # These mistakes would otherwise surface only when the model first calls the tool.
    if isinstance(function, AgentTool):
        raise TypeError(
            f"@wait was applied to the Strands tool {function.tool_name!r}; put it below @tool: "
            "@tool(context=True) then @wait(...) then def ..."
        )
    signature = inspect.signature(function)
    if not has_tool_context(signature):
        raise TypeError(
            f"@wait on {function.__name__!r} needs the Strands ToolContext to "
            "park: add a `tool_context: ToolContext` parameter and decorate with @tool(context=True)"
        )
    param = signature.parameters.get(decision)
    if param is not None and param.default is inspect.Parameter.empty:
        # The parameter is hidden from the model, so Strands never passes it: the call binds
        # only with a default (and a call that runs without asking receives that default).
        raise TypeError(
            f"@wait(decision={decision!r}) on {function.__name__!r}: give the {decision!r} "
            f"parameter a default (e.g. `{decision}: Any = None`); Strands calls the tool without it"
        )
    return function


@overload
def wait(policy: F, /) -> F: ...
@overload
def wait(
    policy: WaitPolicy | Mapping[str, Any] | None = None,
    /,
    *,
    mode: Literal["interrupt", "async"] = "interrupt",
    announce: Announce = None,
    decision: str = "decision",
    when: Callable[..., Any] | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Callable[[F], F]: ...
def wait(
    policy: Any = None,
    /,
    *,
    mode: Literal["interrupt", "async"] = "interrupt",
    announce: Announce = None,
    decision: str = "decision",
    when: Callable[..., Any] | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Any:
    """Ask a human before a Strands tool runs.

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

    Returns:
        The decorated function, or a decorator.

    Raises:
        TypeError: ``@wait`` was put above ``@tool``, the function has no ``ToolContext``
            parameter to park with, or its decision parameter has no default.
    """
    if callable(policy) and not isinstance(policy, WaitPolicy | Mapping):
        return _core_wait(_checked(cast("Callable[..., Any]", policy), decision))
    decorator = _core_wait(
        cast("WaitPolicy | Mapping[str, Any] | None", policy),
        mode=mode,
        announce=announce,
        decision=decision,
        when=when,
        clock=clock,
    )

    def apply(function: Callable[..., Any]) -> Any:
        return decorator(_checked(function, decision))

    return apply


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
