"""What a host writes in the audit trail: ``resumed`` and ``refused``, and ``executed`` calls.

The trail itself (entries, hash chains, the sqlite log) is core's
(:mod:`agent_wait.core._audit`); what a host did with an answer, and what an approved call ran
with, only a host knows.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from agent_wait.core._audit import AuditLog, call_digest, configured_audit, record
from agent_wait.core._canonical import answer_digest, to_jsonable
from agent_wait.core._models import Answer

_HANDLING: contextvars.ContextVar[Answer | None] = contextvars.ContextVar(
    "agent_wait_audit_handling", default=None
)


def handling(message: object) -> None:
    """Note the answer message the host is handling (None for a start message)."""
    _HANDLING.set(message if isinstance(message, Answer) else None)


def answered_question(answer: Any) -> tuple[str, str] | None:
    """``(thread_id, question_id)`` of the question the handled message answered with ``answer``."""
    message = _HANDLING.get()
    if message is None:
        return None
    wanted = answer_digest(answer)
    for entry in message.entries():
        if answer_digest(entry.answer) == wanted:
            return message.thread_id, entry.question_id
    return None


def run_recorded(
    log: Callable[[], AuditLog | None],
    function: str,
    ran_with: Mapping[str, Any],
    answer: Any,
    body: Callable[[], Any],
) -> Any:
    """Run an approved body, recording ``executed`` with the digest of the arguments it ran with."""
    where = answered_question(answer)
    if where is None:
        return body()
    digest = call_digest(function, cast("Mapping[str, Any]", to_jsonable(dict(ran_with))))
    try:
        result = body()
    except BaseException as error:
        record(log(), *where, "executed", _ran(function, digest, f"raised {type(error).__name__}"))
        raise
    record(log(), *where, "executed", _ran(function, digest, "returned"))
    return result


def _ran(function: str, digest: str, outcome: str) -> dict[str, Any]:
    return {"function": function, "call_digest": digest, "outcome": outcome}


def audit_handled(handled: Any, message: object) -> None:
    """Record what the host did with an answer: ``resumed`` or ``refused``, per question.

    In the configured audit log (beside the configured ledger).
    """
    if not isinstance(message, Answer) or not (handled.answered or handled.refused):
        return
    log = configured_audit()
    outcome = str(handled.outcome.value)
    for question_id in cast("tuple[str, ...]", handled.answered):
        record(log, message.thread_id, question_id, "resumed", {"outcome": outcome})
    for question_id in cast("tuple[str, ...]", handled.refused):
        facts = {"outcome": outcome, "reason": handled.detail, "by": message.answered_by}
        record(log, message.thread_id, question_id, "refused", facts)


async def arun_recorded(
    log: Callable[[], AuditLog | None],
    function: str,
    ran_with: Mapping[str, Any],
    answer: Any,
    body: Callable[[], Awaitable[Any]],
) -> Any:
    """Async :func:`run_recorded`: the entry is written once the body's coroutine finished."""
    where = answered_question(answer)
    if where is None:
        return await body()
    digest = call_digest(function, cast("Mapping[str, Any]", to_jsonable(dict(ran_with))))
    try:
        result = await body()
    except BaseException as error:
        outcome = f"raised {type(error).__name__}"
        await asyncio.to_thread(record, log(), *where, "executed", _ran(function, digest, outcome))
        raise
    await asyncio.to_thread(record, log(), *where, "executed", _ran(function, digest, "returned"))
    return result
