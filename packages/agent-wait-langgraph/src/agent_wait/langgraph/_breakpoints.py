"""Static breakpoints (``interrupt_before`` / ``interrupt_after``) as questions.

A thread stopped at a breakpoint has no interrupt: LangGraph only stops, and ``invoke(None,
config)`` continues it. The host tells such a stop from the thread's latest checkpoint (the
next tasks include a breakpoint node, or the step just run did, and the state changed since the
thread last went past a breakpoint, which is LangGraph's own test) and asks "continue past it?"
under an id minted from that checkpoint, so the same stop always asks the same question.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from agent_wait.core import CallContext, InvalidAnswer, Question, canonical_json, to_jsonable
from agent_wait.langgraph._compat import INTERRUPT
from langgraph.checkpoint.base import CheckpointTuple

Breakpoints = Literal["*"] | Sequence[str]
"""Breakpoint nodes as LangGraph takes them: a list of node names, or ``"*"`` for every node."""

REJECTED_KEY = "agent_wait_breakpoint_rejected"
"""Checkpoint metadata: the id of the breakpoint question a person rejected; the thread stays
stopped there and no longer asks it."""
REASON_KEY = "agent_wait_breakpoint_reason"
"""Checkpoint metadata: why the breakpoint was rejected (the answer's ``reason``, or empty)."""

_PREVIEW = 200
"""The longest JSON text a state value is shown as in a breakpoint question; longer is cut."""

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"enum": ["approve", "reject"]},
        "reason": {"type": "string"},
    },
    "required": ["action"],
    "additionalProperties": False,
}
"""What a breakpoint question takes: approve (continue), or reject with an optional reason."""


@dataclass(frozen=True)
class Breakpoint:
    """Where a thread stopped: before the next tasks of ``node``, or after ``node`` ran."""

    question_id: str
    where: Literal["before", "after"]
    node: str
    next: tuple[str, ...]


def _matches(nodes: Breakpoints, node: str) -> bool:
    return nodes == "*" or node in nodes


def _updated_since_last_stop(latest: CheckpointTuple) -> bool:
    # LangGraph's should_interrupt: a breakpoint stops a run only when a channel changed since
    # the thread last went past one; a resume marks the versions it went past.
    checkpoint = latest.checkpoint
    seen = cast("Mapping[str, Any]", checkpoint["versions_seen"].get(INTERRUPT) or {})
    return any(
        chan not in seen or version > seen[chan]
        for chan, version in checkpoint["channel_versions"].items()
    )


def stopped_at(
    thread_id: str,
    latest: CheckpointTuple | None,
    next_nodes: Sequence[str],
    before: Breakpoints,
    after: Breakpoints,
    ran: Sequence[str] | None,
) -> Breakpoint | None:
    """The breakpoint the thread is stopped at, or None.

    Args:
        thread_id: The thread.
        latest: Its latest checkpoint.
        next_nodes: The nodes of its next tasks (``StateSnapshot.next``); none: it finished.
        before: The ``interrupt_before`` nodes (compiled and given to the run).
        after: The ``interrupt_after`` nodes.
        ran: The nodes of the step that wrote ``latest`` (the parent checkpoint's ``next``);
            None when not read (no ``after`` breakpoints).
    """
    if latest is None or not next_nodes or REJECTED_KEY in (latest.metadata or {}):
        return None
    if not _updated_since_last_stop(latest):
        return None
    where: Literal["before", "after"]
    node = next((n for n in next_nodes if _matches(before, n)), None)
    if node is not None:
        where = "before"
    else:
        node = next((n for n in ran or () if _matches(after, n)), None)
        if node is None or latest.metadata.get("source") != "loop":
            return None
        where = "after"
    checkpoint_id = str((latest.config.get("configurable") or {}).get("checkpoint_id"))
    minted = hashlib.sha256(f"{thread_id}|{checkpoint_id}|{where}|{node}".encode()).hexdigest()
    return Breakpoint(minted[:32], where, node, tuple(next_nodes))


def _preview(value: Any, key: str) -> Any:
    try:
        plain = to_jsonable(value, f"state.{key}")
    except TypeError:
        text = repr(value)
    else:
        text = canonical_json(plain)
        if len(text) <= _PREVIEW:
            return plain
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def state_summary(values: Any) -> Any:
    """The thread's state as a breakpoint question shows it: each value, long ones cut short."""
    if not isinstance(values, Mapping):
        return _preview(values, "value")
    return {str(k): _preview(v, str(k)) for k, v in cast("Mapping[Any, Any]", values).items()}


def question_of(stop: Breakpoint, values: Any) -> Question:
    """The question a breakpoint asks: continue past it, with the pending state to judge by."""
    if stop.where == "before":
        text = f"Continue past the breakpoint before node {stop.node!r} (it has not run yet)?"
    else:
        text = (
            f"Continue past the breakpoint after node {stop.node!r} "
            f"(next: {', '.join(repr(n) for n in stop.next)})?"
        )
    return Question(
        question_id=stop.question_id,
        question={
            "breakpoint": f"interrupt_{stop.where}",
            "node": stop.node,
            "next": list(stop.next),
            "text": text,
            "state": state_summary(values),
        },
        answer_schema=ANSWER_SCHEMA,
        context=CallContext(node=stop.node),
    )


def verdict_of(answer: Any) -> tuple[bool, str]:
    """Whether ``answer`` continues past the breakpoint, and the rejection's reason.

    Raises:
        InvalidAnswer: The answer is not ``{"action": "approve" | "reject", "reason"?: text}``.
    """
    example = '{"action": "approve"} or {"action": "reject", "reason": "..."}'
    if not isinstance(answer, Mapping):
        raise InvalidAnswer(f"answer: a breakpoint takes {example}, got {answer!r}")
    data = cast("Mapping[str, Any]", answer)
    action = data.get("action")
    if action not in ("approve", "reject"):
        raise InvalidAnswer(f"answer.action: expected 'approve' or 'reject', got {action!r}")
    extra = sorted(set(data) - {"action", "reason"})
    if extra:
        raise InvalidAnswer(f"answer: {extra} are not fields of a breakpoint answer ({example})")
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise InvalidAnswer(f"answer.reason: expected text, got {reason!r}")
    return action == "approve", reason
