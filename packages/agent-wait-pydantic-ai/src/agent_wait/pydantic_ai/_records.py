"""An approved deferred tool call that is not a ``@wait`` one runs at most once, across crashes.

A ``requires_approval=True`` tool, or one that raises ``ApprovalRequired``, runs its body when
the host resumes the run with its approval. The host resumes with :class:`ApprovedCallRecords`
among the run's capabilities: around the approved call's execution it keeps the same records a
``@wait`` body keeps (``executing`` under a fencing token in the execution ledger before, ``done``
with the JSON result after). A run that finds ``done`` returns the recorded result without
running the tool; one that finds ``executing`` defers the call again with the in-doubt question
(``yes`` records it done, ``no`` runs it once more). ``@wait`` tools keep their own records and
are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from agent_wait.core import (
    Execution,
    ExecutionLedger,
    WaitPolicy,
    configured_ledger,
    derive_question_id,
    to_jsonable,
)
from agent_wait.host.adapter import (
    IN_DOUBT_FUNCTION,
    PAYLOAD_KEY,
    arun_approved_once,
    in_doubt_payload,
)
from agent_wait.pydantic_ai._adapter import (
    IN_DOUBT,
    RECORDED,
    answer_from_metadata,
    in_doubt_reply,
    tool_call_key,
)
from pydantic_ai import ApprovalRequired, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import ValidatedToolArgs, WrapToolExecuteHandler
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition


class ApprovedCallRecords(AbstractCapability[Any]):
    """Keeps the approved calls ``calls`` (tool call ids) of one resume to one run each.

    Args:
        calls: The tool call ids the resume approves that are not ``@wait`` calls (each
            approval, and each answered in-doubt question of such a call).
        ledger: Where the records live (None: :func:`~agent_wait.core.configured_ledger`).
    """

    def __init__(self, calls: frozenset[str], ledger: ExecutionLedger | None = None) -> None:
        self.calls = calls
        self.ledger = ledger

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        """Run the approved call's body unless a record says it ran or may have run."""
        key = tool_call_key(ctx) if ctx.tool_call_approved else None
        if call.tool_call_id not in self.calls or key is None:
            return await handler(args)
        try:
            shown = cast("dict[str, Any]", to_jsonable(args, f"{call.tool_name}()"))
        except TypeError:
            shown = call.args_as_dict()
        ledger = self.ledger if self.ledger is not None else configured_ledger()

        async def in_doubt(found: Execution) -> Mapping[str, Any]:
            reply: object = in_doubt_reply(ctx.tool_call_metadata, found.attempt)
            if reply is None:
                raise ApprovalRequired(metadata=_in_doubt(ctx, call, key, shown, found.attempt))
            return cast("Mapping[str, Any]", reply)

        # A tool that asks for approval again (ApprovalRequired) did not run: like any exception
        # from the body, it leaves no record.
        return await arun_approved_once(
            ledger, key, call.tool_name, lambda: handler(args), in_doubt
        )


def _in_doubt(
    ctx: RunContext[Any], call: ToolCallPart, key: str, args: dict[str, Any], attempt: int
) -> dict[str, Any]:
    # The same shape as a @wait call's in-doubt question (see the adapter), marked RECORDED so
    # the host keeps this capability around its answer's run, with the arguments the approved
    # run had (its answer may have changed them) for that run to take again.
    payload = in_doubt_payload(call.tool_name, args, WaitPolicy(), attempt)
    doubt = {
        "question_id": derive_question_id(key, IN_DOUBT_FUNCTION, {"attempt": attempt}),
        "attempt": attempt,
        "answer": answer_from_metadata(ctx.tool_call_metadata),
        RECORDED: args,
    }
    return {**payload, PAYLOAD_KEY: {**payload[PAYLOAD_KEY], IN_DOUBT: doubt}}
