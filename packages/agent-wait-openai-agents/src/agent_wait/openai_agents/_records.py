"""An approved tool call runs at most once, across crashes.

The SDK runs an approved call when the host resumes the run, and the host stores the run only
when it returns: a worker killed inside the tool leaves the thread parked on the question it
was answering, and the redelivered answer would run the tool again. So the host resumes with
the approved call ids in :data:`_APPROVED`, and every function tool that asks for approval
(``@wait`` or the SDK's ``needs_approval``) is guarded (:func:`guard`): around an approved
call's body it keeps the records a ``@wait`` body keeps elsewhere (``executing`` under a fencing
token in the execution ledger before, ``done`` with the JSON result after). A run that finds
``done`` returns the recorded result without running the tool; one that finds ``executing``
raises :class:`InDoubt`, and the host parks the thread on the in-doubt question (``yes``
records it done, ``no`` runs it once more).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast

from agents import Agent, FunctionTool
from agents.tool_context import ToolContext

from agent_wait.core import (
    CallContext,
    Execution,
    Question,
    WaitPolicy,
    configured_ledger,
    derive_question_id,
    to_jsonable,
)
from agent_wait.host.adapter import (
    IN_DOUBT_FUNCTION,
    arun_approved_once,
    in_doubt_payload,
    question_from_value,
)
from agent_wait.openai_agents._questions import ledger_of, once_of, policy_of

_GUARDED = "_agent_wait_guarded"

Invoke = Callable[[ToolContext[Any], str], Awaitable[Any]]


@dataclass(frozen=True)
class Approved:
    """What a resume approved: its thread, the approved call ids, the in-doubt answers given.

    ``replies`` maps a call id to the answers of its in-doubt questions by attempt (as text,
    the way the thread's record keeps them).
    """

    thread_id: str
    calls: frozenset[str]
    replies: Mapping[str, Mapping[str, Any]] = field(default_factory=dict[str, Mapping[str, Any]])


_APPROVED: ContextVar[Approved | None] = ContextVar(
    "agent_wait_openai_agents_approved", default=None
)


class InDoubt(Exception):
    """An approved call whose earlier run was cut short: whether it had its effect is unknown."""

    def __init__(self, question: Question, call_id: str, attempt: int) -> None:
        super().__init__(f"call {call_id!r} ran before and was cut short (attempt {attempt})")
        self.question = question
        self.call_id = call_id
        self.attempt = attempt


def in_doubt_in(error: BaseException) -> InDoubt | None:
    """The :class:`InDoubt` behind ``error`` (the SDK wraps what a tool raises), or None."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, InDoubt):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def approving(approved: Approved) -> Any:
    """Make ``approved`` what the guarded tools of the runs started from here see.

    Returns the token to :func:`done_approving` with once those runs were started (a streamed
    run copies the context when it starts).
    """
    return _APPROVED.set(approved)


def done_approving(token: Any) -> None:
    """Undo :func:`approving`."""
    _APPROVED.reset(token)


def _agents(agent: Agent[Any]) -> Iterator[Agent[Any]]:
    seen: set[int] = set()
    todo: list[Agent[Any]] = [agent]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(h for h in current.handoffs if isinstance(h, Agent))


def guard(agent: Agent[Any]) -> None:
    """Guard every function tool of ``agent`` and the agents it hands off to (once each)."""
    for each in _agents(agent):
        for tool in each.tools:
            if isinstance(tool, FunctionTool):
                _guard(tool)


def _guard(tool: FunctionTool) -> None:
    if getattr(tool, _GUARDED, False) or tool.needs_approval is False:
        return
    if not once_of(tool):
        return
    invoke: Invoke = tool.on_invoke_tool

    async def on_invoke_tool(ctx: ToolContext[Any], input: str) -> Any:
        approved = _APPROVED.get()
        if approved is None or ctx.tool_call_id not in approved.calls:
            return await invoke(ctx, input)
        return await _at_most_once(approved, tool, ctx, input, invoke)

    tool.on_invoke_tool = on_invoke_tool
    setattr(tool, _GUARDED, True)


def execution_key(thread_id: str, tool: str, call_id: str) -> str:
    """The record of call ``call_id`` of ``tool`` in thread ``thread_id``."""
    return derive_question_id(thread_id, tool, {"call_id": call_id})


async def _at_most_once(
    approved: Approved, tool: FunctionTool, ctx: ToolContext[Any], input: str, invoke: Invoke
) -> Any:
    key = execution_key(approved.thread_id, tool.name, ctx.tool_call_id)
    chosen = ledger_of(tool)
    ledger = chosen if chosen is not None else configured_ledger()
    replies = approved.replies.get(ctx.tool_call_id, {})

    async def in_doubt(found: Execution) -> Mapping[str, Any]:
        reply: object = replies.get(str(found.attempt))
        if not isinstance(reply, Mapping):
            question = _in_doubt_question(key, tool, ctx, input, found.attempt)
            raise InDoubt(question, ctx.tool_call_id, found.attempt)
        return cast("Mapping[str, Any]", reply)

    return await arun_approved_once(ledger, key, tool.name, lambda: invoke(ctx, input), in_doubt)


def _in_doubt_question(
    key: str, tool: FunctionTool, ctx: ToolContext[Any], input: str, attempt: int
) -> Question:
    try:
        parsed: object = json.loads(input) if input else {}
    except ValueError:
        parsed = {"arguments": input}
    args = cast("dict[str, Any]", parsed) if isinstance(parsed, dict) else {"arguments": parsed}
    policy = policy_of(tool) or WaitPolicy()
    payload = in_doubt_payload(tool.name, to_jsonable(args, f"{tool.name}()"), policy, attempt)
    question_id = derive_question_id(key, IN_DOUBT_FUNCTION, {"attempt": attempt})
    agent = getattr(ctx, "agent", None)
    context = CallContext(
        node=getattr(agent, "name", None) or None, tool=tool.name, tool_call_id=ctx.tool_call_id
    )
    return question_from_value(question_id, payload).model_copy(update={"context": context})
