"""``@wait`` for OpenAI Agents SDK function tools, and the questions a parked run asks.

The SDK parks a run itself: a function tool with ``needs_approval`` (``True`` or a callable)
is not invoked until the run is resumed with ``RunState.approve`` or ``RunState.reject``, and
the run returns its pending calls as ``RunResult.interruptions`` (``ToolApprovalItem``). So
``@wait`` only makes a function such a tool and records its policy on it; every pending call
(``@wait`` or the SDK's own ``needs_approval``) becomes one question, whose id is the model's
``call_id``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, cast, overload

from agents import FunctionTool, ToolApprovalItem, function_tool

from agent_wait.core import (
    CallContext,
    ExecutionLedger,
    InvalidAnswer,
    Question,
    Source,
    WaitPolicy,
    to_jsonable,
)

# The attribute of a FunctionTool that carries its @wait policy (FunctionTool is a mutable
# dataclass; it is neither hashable nor weak-referenceable by value, so no side table).
_POLICY_ATTRIBUTE = "_agent_wait_policy"
_ONCE_ATTRIBUTE = "_agent_wait_once"
_LEDGER_ATTRIBUTE = "_agent_wait_ledger"

Decision = tuple[bool, str | None]
"""What an answer does to a pending call: approve (True) or reject (False, with the text the
model reads; None for the SDK's default)."""


def _policy(policy: WaitPolicy | Mapping[str, Any] | None) -> WaitPolicy:
    if policy is None:
        return WaitPolicy()
    if isinstance(policy, WaitPolicy):
        return policy
    if isinstance(policy, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        return WaitPolicy.model_validate(dict(policy))
    raise TypeError(
        f"policy: expected a WaitPolicy, a mapping of its fields or None, got {policy!r}"
    )


def _gated(
    target: Callable[..., Any] | FunctionTool,
    policy: WaitPolicy,
    once: bool = True,
    ledger: ExecutionLedger | None = None,
) -> FunctionTool:
    if isinstance(target, FunctionTool):
        tool = target
        if tool.needs_approval is False:
            # A callable needs_approval is the tool's own `when`: kept.
            tool.needs_approval = True
    elif callable(target):
        tool = function_tool(target, needs_approval=True)
    else:
        raise TypeError(f"@wait: expected a function or an agents.FunctionTool, got {target!r}")
    setattr(tool, _POLICY_ATTRIBUTE, policy)
    setattr(tool, _ONCE_ATTRIBUTE, once)
    setattr(tool, _LEDGER_ATTRIBUTE, ledger)
    return tool


@overload
def wait(policy: Callable[..., Any] | FunctionTool, /) -> FunctionTool: ...
@overload
def wait(
    policy: WaitPolicy | Mapping[str, Any] | None = None,
    /,
    *,
    once: bool = True,
    ledger: ExecutionLedger | None = None,
) -> Callable[[Callable[..., Any] | FunctionTool], FunctionTool]: ...
def wait(
    policy: WaitPolicy | Mapping[str, Any] | Callable[..., Any] | FunctionTool | None = None,
    /,
    *,
    once: bool = True,
    ledger: ExecutionLedger | None = None,
) -> FunctionTool | Callable[[Callable[..., Any] | FunctionTool], FunctionTool]:
    """Ask a human before an OpenAI Agents SDK function tool runs.

    Put it on the function (it becomes a ``FunctionTool`` with ``needs_approval=True``), or
    above ``@function_tool(...)`` (a callable ``needs_approval`` is kept: it decides which
    calls ask)::

        @wait(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))
        def issue_refund(order_id: str, amount: int) -> str: ...

        agent = Agent("refunds", tools=[issue_refund])

    The body runs only once a human approved the call; the question id is the model's
    ``call_id``. Answers: ``{"action": "approve"}`` (or ``true``) runs it;
    ``{"action": "reject", "reason": ...}`` (or ``false``, or a text) does not, and the model
    reads the reason. The SDK runs an approved call with the model's arguments, so an answer
    that edits them is refused.

    Args:
        policy: The :class:`~agent_wait.core.WaitPolicy` (or a mapping of its fields); None for
            the default policy. Works bare (``@wait``) too.
        once: True (the default): an approved call runs at most once, even when a worker dies
            inside it (:func:`handle_message` keeps its record in the execution ledger; a run
            that finds it cut short asks a person whether it happened). False: no record, the
            SDK's own semantics (a redelivered answer runs it again).
        ledger: The execution ledger (None: ``agent_wait.core.configured_ledger()``).

    Returns:
        The ``FunctionTool``, or a decorator that makes one.
    """
    if not isinstance(once, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"once: expected True or False, got {once!r}")
    if ledger is not None and not isinstance(ledger, ExecutionLedger):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"ledger: expected an ExecutionLedger or None, got {ledger!r}")
    if isinstance(policy, FunctionTool) or (
        callable(policy) and not isinstance(policy, WaitPolicy | Mapping)
    ):
        return _gated(policy, WaitPolicy())
    chosen = _policy(cast("WaitPolicy | Mapping[str, Any] | None", policy))

    def decorate(target: Callable[..., Any] | FunctionTool) -> FunctionTool:
        return _gated(target, chosen, once, ledger)

    return decorate


def policy_of(tool: object) -> WaitPolicy | None:
    """The ``@wait`` policy of a tool; None for a tool ``@wait`` did not decorate."""
    policy = getattr(tool, _POLICY_ATTRIBUTE, None)
    return policy if isinstance(policy, WaitPolicy) else None


def once_of(tool: object) -> bool:
    """Whether an approved call of ``tool`` is kept to one run (``@wait(once=...)``; True)."""
    return getattr(tool, _ONCE_ATTRIBUTE, True) is not False


def ledger_of(tool: object) -> ExecutionLedger | None:
    """The ``@wait(ledger=...)`` of a tool; None for the configured ledger."""
    ledger: object = getattr(tool, _LEDGER_ATTRIBUTE, None)
    return ledger if isinstance(ledger, ExecutionLedger) else None


def approval_schema() -> dict[str, Any]:
    """The answers a pending call takes: the SDK's approve and reject (with its message).

    ``args`` must be empty: the SDK runs an approved call with the model's arguments.
    """
    return {
        "description": "Approve or reject the call: true or {action: approve} run it; false, "
        "{action: reject} (reason is what the model reads) or a text reject it.",
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "action": {"enum": ["approve", "reject"]},
                    # An edit is refused where it is given, not after the host received it.
                    "args": {
                        "type": "object",
                        "maxProperties": 0,
                        "description": "The SDK runs an approved call with the model's "
                        "arguments: none can be changed.",
                    },
                    "reason": {"type": "string"},
                },
                "required": ["action"],
            },
            {"type": "boolean"},
            {"type": "string", "minLength": 1},
        ],
    }


def _arguments(item: ToolApprovalItem) -> dict[str, Any]:
    text = item.arguments
    if not text:
        return {}
    try:
        parsed: object = json.loads(text)
    except ValueError:
        # A hosted or MCP call whose arguments are not JSON: published as the text.
        return {"arguments": text}
    if isinstance(parsed, dict):
        return cast("dict[str, Any]", to_jsonable(cast("dict[str, Any]", parsed), f"{item.name}()"))
    return {"arguments": to_jsonable(parsed, f"{item.name}()")}


def _tool(item: ToolApprovalItem) -> object:
    tools: list[Any] = list(getattr(item.agent, "tools", None) or [])
    return next((t for t in tools if getattr(t, "name", None) == item.name), None)


def question_of(item: ToolApprovalItem) -> Question:
    """The question of one pending call, with its agent, tool and call id as ``context``.

    A ``@wait`` tool's question carries its policy and source; any other call waiting for
    approval (``needs_approval``, an MCP server's ``require_approval``) the default policy.

    Raises:
        ValueError: The call has no ``call_id`` (there is nothing to answer it by).
    """
    call_id = item.call_id
    name = item.name or "tool"
    if not call_id:
        raise ValueError(f"the pending call of {name!r} has no call_id to answer it by")
    args = _arguments(item)
    policy = policy_of(_tool(item))
    return Question(
        question_id=call_id,
        question={"function": name, "args": args},
        policy=policy or WaitPolicy(),
        source=None if policy is None else Source(function=name),
        answer_schema=approval_schema(),
        context=CallContext(
            node=item.agent.name or None,
            tool=name,
            tool_call_id=call_id,
            framework="openai_agents",
            agent=item.agent.name or None,
        ),
    )


def questions_in(result: Any) -> list[Question]:
    """The questions a run parked on, in the SDK's order (empty when it finished).

    Args:
        result: A ``RunResult`` (or ``RunResultStreaming``), or its list of interruptions.
    """
    items: object = getattr(result, "interruptions", result)
    if not isinstance(items, list):
        raise TypeError(
            "result: expected an agents RunResult or a list of ToolApprovalItem, "
            f"got {type(result).__name__}"
        )
    return [question_of(i) for i in cast("list[ToolApprovalItem]", items)]


def decision(answer: Any) -> Decision:
    """What ``answer`` does to the pending call.

    Raises:
        InvalidAnswer: The answer is neither an approval nor a rejection the SDK can apply.
    """
    if answer is True:
        return True, None
    if answer is False:
        return False, None
    if isinstance(answer, str) and answer.strip():
        return False, answer
    if isinstance(answer, Mapping):
        fields = cast("Mapping[str, Any]", answer)
        action = fields.get("action")
        if fields.get("args"):
            raise InvalidAnswer(
                f"answer.args: the OpenAI Agents SDK runs an approved call with the model's "
                f"arguments and cannot change them, got {fields['args']!r}"
            )
        reason = fields.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise InvalidAnswer(f"answer.reason: expected text, got {reason!r}")
        if action == "approve":
            return True, None
        if action == "reject":
            return False, reason or None
        raise InvalidAnswer(
            f"answer.action: expected 'approve' or 'reject' (the SDK's decisions), got {action!r}"
        )
    raise InvalidAnswer(
        "answer: expected true, false, a text, or an object with action 'approve' or "
        f"'reject', got {answer!r}"
    )
