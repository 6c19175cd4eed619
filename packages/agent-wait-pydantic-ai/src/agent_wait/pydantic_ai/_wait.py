"""``@wait`` and ``park`` for Pydantic AI tools, and ``publish_interrupts`` for Pydantic AI results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from agent_wait.host.adapter import PAYLOAD_KEY, make_publish_interrupts, make_wait
from agent_wait.pydantic_ai._adapter import ADAPTER, DECISION_FLAG, answer_from_metadata
from pydantic_ai import ApprovalRequired, RunContext, Tool


def _checked(function: object, decision: str) -> None:
    # Above @agent.tool the decorator would wrap a registered tool the agent never calls through us.
    if isinstance(function, Tool):
        raise TypeError(
            f"@wait was applied to the Pydantic AI Tool {function.name!r}; decorate the function "
            "first: @agent.tool on top, then @wait(...), then def ...(ctx: RunContext[...], ...)"
        )


_WAIT_DOC = """Ask a human before a Pydantic AI tool runs.

Put it below ``@agent.tool``; the tool's first parameter is the ``RunContext``, which is
never published::

    @agent.tool
    @wait(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))
    def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str: ...

Works bare (``@wait``) or called, on sync and async tools. The agent's ``output_type``
must include ``DeferredToolRequests`` (``output_type=[str, DeferredToolRequests]``).

Args:
    policy: The :class:`~agent_wait.core.WaitPolicy` (or a mapping of its fields); None for
        the default policy.
    mode: ``"interrupt"``: the call raises ``ApprovalRequired(metadata=<payload>)``, the run
        ends with ``DeferredToolRequests`` and the host publishes it
        (:func:`publish_interrupts` or :func:`handle_message`); the question id is the
        ``tool_call_id``. On the approved re-run the answer is read from
        ``ctx.tool_call_metadata`` (the host's ``DeferredToolResults.metadata``; none means
        ``{"action": "approve"}``). ``"async"``: the call publishes its question itself
        under ``sha256(thread_id | function | args)``, with the thread id read from the
        run's ``deps`` (attribute or key ``thread_id``), and returns ``{"status":
        "pending_approval", "question_id", "function"}`` to the model without running.
    announce: Where async mode publishes (required there).
    decision: The name of a parameter (hidden from the model) that
        receives the whole answer; the body then always runs. Without one, ``{"action":
        "approve"}`` runs the body, ``{"action": "approve", "args": {...}}`` runs it with
        those arguments changed, and anything else never calls it: the host denies the
        call and the model receives the answer as JSON.
    when: A predicate over the published arguments; False runs the body without asking. It
        runs again on the approved re-run, so it must be deterministic; if it raises, the
        call asks.
    clock: Returns "now" (aware), for ``expires_at`` in async mode.
    once: True (the default): an approved body runs at most once across crashes. It is
        recorded ``executing`` in the execution ledger before it runs and ``done`` with its
        JSON result after, keyed by the thread (under ``handle_message``), the place of the
        call's response in the history and its ``tool_call_id``; a redelivered answer that
        finds ``done`` returns the recorded result, one that finds ``executing`` defers the
        call again with an in-doubt question (its own ``question_id``; ``yes`` or ``no``).
        False: no record (a run killed inside the body runs it again).
    ledger: The execution ledger (None: ``agent_wait.core.configured_ledger()``).

Returns:
    The decorated function, or a decorator.

Raises:
    TypeError: ``@wait`` was put above ``@agent.tool`` (on a ``Tool``), or the function's
        first parameter is not annotated ``RunContext[...]``.
"""

wait = make_wait(ADAPTER, check=_checked, doc=_WAIT_DOC)

hitl = wait
"""Alias of :func:`wait`."""

publish_interrupts, apublish_interrupts = make_publish_interrupts(ADAPTER)
publish_interrupts.__doc__ = """Publish the questions a Pydantic AI run is parked on.

Args:
    result: The ``AgentRunResult`` (nothing is published unless its output is
        ``DeferredToolRequests``), or the ``DeferredToolRequests`` itself.
    thread_id: The conversation identity under which the host stores the message history.
    announce: An announcer, a list, a registered name, or None for the configured default.
    reply_to: A hint for where answers go, copied into every envelope.
    strict: Raise :class:`~agent_wait.core.AnnounceFailed` after every announcer was tried if
        a delivery failed, so the host can leave its inbound message unacknowledged.
    clock: Returns "now" (aware); ``expires_at`` is measured from it.

Returns:
    The :class:`~agent_wait.core.PublishReport`: one envelope per pending call (``question_id``
    = ``tool_call_id``), approvals first, then deferred calls.
"""
apublish_interrupts.__doc__ = (
    """Async :func:`publish_interrupts`: announcers are delivered to concurrently."""
)


def park(ctx: RunContext[Any], value: Mapping[str, Any]) -> Any:
    """Park the tool call ``ctx`` runs on ``value``, a question built by code other than ``@wait``.

    Pydantic AI's counterpart of LangGraph's ``interrupt(value)``: ``value`` is a parked
    question (``agent_wait.host.adapter.wait_payload``, e.g. an MCP elicitation from
    ``agent_wait.mcp``). The first time it raises ``ApprovalRequired`` with ``value`` as the
    metadata, so the run ends with ``DeferredToolRequests`` and the host publishes the question
    (its id is the ``tool_call_id``). The host approves the call whatever the answer is
    (``accept``, ``decline`` and ``cancel`` alike) and the tool runs again; ``park`` then returns
    the answer, read from ``ctx.tool_call_metadata``. A call parks once: a second ``park`` in the
    approved re-run returns the same answer, so a tool that may ask twice in one call (an MCP
    server asking several times) needs one tool call per question.

    Raises:
        ApprovalRequired: The call is not approved yet: the run parks on ``value``.
        ValueError: ``value`` is not a parked question (no ``question`` and ``agent_wait``).
    """
    if ctx.tool_call_approved:
        return answer_from_metadata(ctx.tool_call_metadata)
    section: object = value.get(PAYLOAD_KEY)
    if "question" not in value or not isinstance(section, Mapping):
        raise ValueError(
            f"value: not a parked question (needs 'question' and a {PAYLOAD_KEY!r} object, as "
            f"wait_payload builds); got keys {sorted(value)}"
        )
    # Approved whatever the answer: the tool, not the host, decides what a decline means.
    marked = {**cast("Mapping[str, Any]", section), DECISION_FLAG: True}
    raise ApprovalRequired(metadata={**value, PAYLOAD_KEY: marked})
