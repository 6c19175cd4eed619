"""The Pydantic AI adapter: ``@wait`` tools park on ``ApprovalRequired``, questions come out of ``DeferredToolRequests``.

A ``@wait`` tool raises ``ApprovalRequired(metadata=<parked payload>)`` on its first run, so the
policy and source ride along with the deferred call. Pydantic AI calls the tool again once the
host approves it; the answer is then read from ``ctx.tool_call_metadata``, which the host fills
from ``DeferredToolResults.metadata`` (see :func:`agent_wait.pydantic_ai.deferred_results`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, cast, get_origin

from agent_wait.core import CallContext, Question, derive_question_id, to_jsonable
from agent_wait.host.adapter import (
    IN_DOUBT_FUNCTION,
    PAYLOAD_KEY,
    WaitCall,
    edited_args_schema,
    question_from_value,
)
from pydantic_ai import AgentRunResult, ApprovalRequired, DeferredToolRequests, RunContext
from pydantic_ai.messages import ModelResponse, ToolCallPart

"""The key of core's parked payload (``agent_wait.host.adapter.wait_payload``) that marks it as ours."""
DECISION_FLAG = "decision"
"""Set to True in the payload's ``agent_wait`` section when the tool has a decision parameter.

Such a tool must run whatever the answer is, so :func:`deferred_results` approves it (and passes
the answer in metadata) instead of denying it.
"""
# A string annotation (``from __future__ import annotations``) naming RunContext, possibly
# qualified (``pydantic_ai.RunContext[Deps]``).
_RUN_CONTEXT_TEXT = re.compile(r"^(?:[A-Za-z_][\w]*\.)*RunContext(?:\[.*\])?$")


def _is_run_context(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return bool(_RUN_CONTEXT_TEXT.match(annotation.strip()))
    return annotation is RunContext or get_origin(annotation) is RunContext


def is_ours(metadata: object) -> bool:
    """True if deferred-call metadata is a parked ``@wait`` payload."""
    return isinstance(metadata, Mapping) and PAYLOAD_KEY in metadata and "question" in metadata


def takes_decision(metadata: object) -> bool:
    """True if deferred-call metadata is a ``@wait`` payload of a tool with a decision parameter."""
    if not is_ours(metadata):
        return False
    section = cast("Mapping[str, Any]", metadata)[PAYLOAD_KEY]
    return (
        isinstance(section, Mapping)
        and cast("Mapping[str, Any]", section).get(DECISION_FLAG) is True
    )


IN_DOUBT = "in_doubt"
"""The key, in a ``@wait`` payload's ``agent_wait`` section, of an in-doubt question's own
data (its ``question_id``, ``attempt`` and the approved ``answer`` the call ran on); in the
metadata that answers it, of ``{"attempt", "reply"}``.

The in-doubt question defers the same tool call a second time, so it cannot take the call's id
(the approval's question id): it has its own, derived from the call's execution key.
"""

RECORDED = "recorded_args"
"""The key, in an in-doubt question's data, of the arguments of a call that is not a ``@wait``
one, whose records the host keeps (see ``ApprovedCallRecords``): the answer to the question
approves the call's re-run with them."""


def recorded_args(metadata: object) -> dict[str, Any] | None:
    """The arguments of a host-recorded call's in-doubt question (see :data:`RECORDED`), or None."""
    doubt = in_doubt_of(metadata)
    args: object = None if doubt is None else doubt.get(RECORDED)
    return dict(cast("Mapping[str, Any]", args)) if isinstance(args, Mapping) else None


_RUNNING_THREAD: ContextVar[str | None] = ContextVar("agent_wait_pydantic_ai_thread", default=None)


@contextmanager
def running_thread(thread_id: str) -> Generator[None]:
    """Name the thread of the runs inside (the host's), for the calls' execution keys."""
    previous = _RUNNING_THREAD.get()
    _RUNNING_THREAD.set(thread_id)
    try:
        yield
    finally:
        # Set back, not reset by token: a stream may be closed from another context.
        _RUNNING_THREAD.set(previous)


def _wrapped_answer(metadata: object) -> Mapping[str, Any] | None:
    if not (
        isinstance(metadata, Mapping) and set(cast("Mapping[str, Any]", metadata)) == {PAYLOAD_KEY}
    ):
        return None
    section = cast("Mapping[str, Any]", metadata)[PAYLOAD_KEY]
    if isinstance(section, Mapping) and set(cast("Mapping[str, Any]", section)) in (
        {"answer"},
        {"answer", IN_DOUBT},
    ):
        return cast("Mapping[str, Any]", section)
    return None


def in_doubt_reply(metadata: object, attempt: object) -> Any:
    """The reply to the in-doubt question of ``attempt`` that this re-run carries, or None."""
    wrapped = _wrapped_answer(metadata)
    data: object = None if wrapped is None else wrapped.get(IN_DOUBT)
    if isinstance(data, Mapping) and cast("Mapping[str, Any]", data).get("attempt") == attempt:
        return cast("Mapping[str, Any]", data).get("reply")
    return None


def in_doubt_of(metadata: object) -> Mapping[str, Any] | None:
    """The in-doubt data of a deferred call's ``@wait`` payload (see :data:`IN_DOUBT`), or None."""
    if not is_ours(metadata):
        return None
    section: object = cast("Mapping[str, Any]", metadata)[PAYLOAD_KEY]
    data: object = (
        cast("Mapping[str, Any]", section).get(IN_DOUBT) if isinstance(section, Mapping) else None
    )
    return cast("Mapping[str, Any]", data) if isinstance(data, Mapping) else None


def question_id_of(call: ToolCallPart, metadata: object) -> str:
    """The question id of a deferred call: its ``tool_call_id``, or its in-doubt question's."""
    doubt = in_doubt_of(metadata)
    if doubt is not None and isinstance(doubt.get("question_id"), str):
        return cast("str", doubt["question_id"])
    return call.tool_call_id


def in_doubt_metadata(doubt: Mapping[str, Any], reply: Any) -> dict[str, Any]:
    """The ``DeferredToolResults.metadata`` that answers an in-doubt question with ``reply``.

    It carries the approved answer the call ran on too: the re-run reads both.
    """
    return {
        PAYLOAD_KEY: {
            "answer": doubt.get("answer"),
            IN_DOUBT: {"attempt": doubt.get("attempt"), "reply": reply},
        }
    }


def answer_from_metadata(metadata: object) -> Any:
    """The answer an approved ``@wait`` call receives, read from ``ctx.tool_call_metadata``.

    None (approved without metadata, e.g. ``approvals={id: True}``) means ``{"action":
    "approve"}``; ``{"agent_wait": {"answer": value}}`` carries an answer that is not an object
    (metadata values must be dicts); any other value is the answer itself, verbatim, as the
    host passes it.
    """
    if metadata is None:
        return {"action": "approve"}
    wrapped = _wrapped_answer(metadata)
    return metadata if wrapped is None else wrapped["answer"]


def answer_metadata(answer: Any) -> dict[str, Any]:
    """The ``DeferredToolResults.metadata`` value that carries ``answer`` (inverse of the reader)."""
    if isinstance(answer, dict):
        data = cast("dict[str, Any]", answer)
        if _wrapped_answer(data) is None:
            return data
    return {PAYLOAD_KEY: {"answer": answer}}


def deferred_requests(result: Any) -> DeferredToolRequests | None:
    """The ``DeferredToolRequests`` a run parked on, or None when it finished.

    Raises:
        TypeError: ``result`` is neither an ``AgentRunResult`` nor ``DeferredToolRequests``.
    """
    if isinstance(result, DeferredToolRequests):
        return result
    if isinstance(result, AgentRunResult):
        output = cast("AgentRunResult[Any]", result).output
        return output if isinstance(output, DeferredToolRequests) else None
    raise TypeError(
        "result: expected a pydantic_ai AgentRunResult or DeferredToolRequests, "
        f"got {type(result).__name__}"
    )


def question_of(
    call: ToolCallPart, metadata: dict[str, Any] | None, *, external: bool = False
) -> Question:
    """The question of one deferred call.

    A ``@wait`` payload gives its question, policy and source; any other call (a
    ``requires_approval`` tool, ``CallDeferred``) is ``{"function", "args"}`` plus its
    ``metadata`` if it has one, with no source. An approval is answered approve or reject (the
    default policy; its ``answer_schema`` is :func:`approval_schema`); an ``external``
    (``CallDeferred``) call is answered with its result, so it states no allowed actions (its
    ``answer_schema`` is :data:`EXTERNAL_RESULT_SCHEMA`). Each carries its tool call as ``context``: the tool's name and
    the model's tool call id.
    """
    context = CallContext(tool=call.tool_name, tool_call_id=call.tool_call_id)
    if is_ours(metadata):
        asked = question_from_value(question_id_of(call, metadata), metadata)
    else:
        question: dict[str, Any] = {
            "function": call.tool_name,
            "args": to_jsonable(call.args_as_dict(), f"{call.tool_name}()"),
        }
        if metadata is not None:
            question["metadata"] = to_jsonable(metadata, f"{call.tool_name}().metadata")
        if not external:
            # Built with its context, not copied to add it: every answer to the thread rebuilds it.
            return Question(
                question_id=call.tool_call_id,
                question=question,
                context=context,
                answer_schema=approval_schema(question["args"]),
            )
        asked = question_from_value(call.tool_call_id, question)
        return asked.model_copy(
            update={"context": context, "answer_schema": EXTERNAL_RESULT_SCHEMA}
        )
    return asked.model_copy(update={"context": context})


def approval_schema(args: Mapping[str, Any]) -> dict[str, Any]:
    """The answers an approval call (``requires_approval``, ``ApprovalRequired``) takes.

    Pydantic AI's own: ``true`` approves, ``false`` denies; ``{"action": "approve"}`` approves,
    with ``args`` changing the call's arguments (``ToolApproved(override_args=...)``);
    ``{"action": "reject", "reason": ...}`` or a text denies (``ToolDenied``), and the model
    reads it.
    """
    return {
        "description": "Approve or deny the call: true or {action: approve} (args changes its "
        "arguments) approve; false, {action: reject} or a text the model reads deny.",
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "action": {"enum": ["approve", "reject"]},
                    "args": edited_args_schema(args),
                    "reason": {"type": "string"},
                },
                "required": ["action"],
            },
            {"type": "boolean"},
            {"type": "string", "minLength": 1},
        ],
    }


EXTERNAL_RESULT_SCHEMA: dict[str, Any] = {
    "description": "The call's result (any JSON but null), which the model receives; or "
    "exactly {kind: model-retry, message} to ask the model to try again, {kind: tool-failed, "
    "message} to fail the call.",
    "not": {"type": "null"},
    "if": {
        "type": "object",
        "properties": {"kind": {"enum": ["model-retry", "tool-failed"]}},
        "required": ["kind", "message"],
        "maxProperties": 2,
    },
    "then": {"properties": {"message": {"type": "string"}}},
    "examples": ["done"],
}
"""The answers a ``CallDeferred`` (external) call takes: its result, or a retry or failure."""


def tool_call_key(ctx: RunContext[Any]) -> str | None:
    """The execution key of the tool call ``ctx`` runs: the thread, its response's place, its id.

    A redelivered answer resumes the same stored history, so the call's response is at the
    same place with the same id; the place tells apart two calls a model gave one id. None
    outside a tool call.
    """
    call_id = ctx.tool_call_id
    if call_id is None:
        return None
    place = next(
        (
            index
            for index in range(len(ctx.messages) - 1, -1, -1)
            if isinstance(message := ctx.messages[index], ModelResponse)
            and any(part.tool_call_id == call_id for part in message.tool_calls)
        ),
        None,
    )
    thread = _RUNNING_THREAD.get() or ""
    return derive_question_id(thread, "pydantic_ai", {"tool_call_id": call_id, "response": place})


class PydanticAIAdapter:
    """The :class:`agent_wait.host.adapter.FrameworkAdapter` of Pydantic AI.

    A ``@wait`` tool takes a ``RunContext`` first parameter: the context says whether the call
    was approved and carries the answer, and (async mode) the run's ``deps`` give the thread id.
    """

    name = "pydantic_ai"

    def park(self, call: WaitCall) -> Any:
        """Raise ``ApprovalRequired`` with the parked payload, or return the approved answer."""
        if call.doubts is not None:
            return self._park_in_doubt(call, call.doubts)
        ctx = self._context(call)
        if ctx.tool_call_approved:
            return answer_from_metadata(ctx.tool_call_metadata)
        raise ApprovalRequired(metadata=self._payload(call))

    def _park_in_doubt(self, call: WaitCall, doubted: WaitCall) -> Any:
        # Asked from inside an approved re-run: the tool call is deferred again, with the
        # in-doubt question as its payload, and comes back approved with the reply.
        ctx = self._context(doubted)
        attempt = call.args["attempt"]
        reply = in_doubt_reply(ctx.tool_call_metadata, attempt)
        if reply is not None:
            return reply
        key = self.execution_key(doubted)
        doubt = {
            "question_id": derive_question_id(key or "", IN_DOUBT_FUNCTION, {"attempt": attempt}),
            "attempt": attempt,
            "answer": answer_from_metadata(ctx.tool_call_metadata),
        }
        section = {**call.payload[PAYLOAD_KEY], IN_DOUBT: doubt}
        raise ApprovalRequired(metadata={**call.payload, PAYLOAD_KEY: section})

    def execution_key(self, call: WaitCall) -> str | None:
        """The answered tool call of ``call``: the thread, its response's place, its id.

        A redelivered answer resumes the same stored history, so the call's response is at
        the same place with the same id; the place tells apart two calls a model gave one id.
        """
        return tool_call_key(self._context(call))

    async def apark(self, call: WaitCall) -> Any:
        """Async :meth:`park` (nothing to await: the deferral is an exception)."""
        return self.park(call)

    def thread_id(self, call: WaitCall) -> str:
        """The thread id from the run's deps: a ``thread_id`` attribute or mapping key.

        Raises:
            ValueError: The deps provide no non-empty string ``thread_id``.
        """
        deps: object = self._context(call).deps
        kind = type(deps).__name__
        if isinstance(deps, Mapping):
            value: object = cast("Mapping[str, Any]", deps).get("thread_id")
        else:
            value = getattr(deps, "thread_id", None)
        if not isinstance(value, str) or not value:
            raise ValueError(
                f"deps.thread_id: @wait(mode='async') tool {call.name!r} reads the thread id from "
                "the run's deps (an attribute or key 'thread_id', a non-empty string); got "
                f"{value!r} from deps of type {kind}. Pass deps=... to the run."
            )
        return value

    def hidden_parameters(self, signature: inspect.Signature) -> frozenset[str]:
        """The ``RunContext`` parameter (the first one), which every ``@wait`` tool needs.

        Raises:
            TypeError: The first parameter is not annotated ``RunContext[...]``.
        """
        params = list(signature.parameters.values())
        if not params or not _is_run_context(params[0].annotation):
            raise TypeError(
                "@wait on a Pydantic AI tool needs a first parameter annotated RunContext[...] "
                "(register it with @agent.tool, not @agent.tool_plain): the run context says "
                f"whether the call was approved and carries the answer; got parameters {list(signature.parameters)}"
            )
        return frozenset({params[0].name})

    def questions_in(self, result: Any) -> list[Question]:
        """The questions a parked run waits on: approvals first, then deferred calls."""
        requests = deferred_requests(result)
        if requests is None:
            return []
        return [
            *(question_of(c, requests.metadata.get(c.tool_call_id)) for c in requests.approvals),
            *(
                question_of(c, requests.metadata.get(c.tool_call_id), external=True)
                for c in requests.calls
            ),
        ]

    def _context(self, call: WaitCall) -> RunContext[Any]:
        name = next(iter(call.bound.signature.parameters))
        ctx = call.bound.arguments.get(name)
        if not isinstance(ctx, RunContext):
            raise TypeError(
                f"{call.name}(): the first argument must be the Pydantic AI RunContext, got "
                f"{type(ctx).__name__}; call the tool through an agent"
            )
        return cast("RunContext[Any]", ctx)

    def _payload(self, call: WaitCall) -> dict[str, Any]:
        names = list(call.bound.signature.parameters)
        # Core hides the run context and the decision parameter from the published args; any
        # hidden parameter besides the context is the decision one.
        if any(n not in call.args for n in names[1:]):
            section = {**call.payload[PAYLOAD_KEY], DECISION_FLAG: True}
            return {**call.payload, PAYLOAD_KEY: section}
        return call.payload


ADAPTER = PydanticAIAdapter()


def questions_in(result: Any) -> list[Question]:
    """The questions a run parked on, in publish order.

    Args:
        result: An ``AgentRunResult`` whose output is ``DeferredToolRequests`` (a finished run
            has none), or the ``DeferredToolRequests`` itself.

    Returns:
        One :class:`~agent_wait.core.Question` per pending call, ``question_id`` = its
        ``tool_call_id``: approvals first, then deferred calls, each in call order.

    Raises:
        TypeError: ``result`` is of another type.
    """
    return ADAPTER.questions_in(result)
