"""The ADK side of ``@wait``: park on a tool confirmation, read questions from session events."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from google.adk.events import Event
from google.adk.tools import ToolContext
from google.genai import types

from agent_wait.core import (
    CallContext,
    InvalidAnswer,
    Question,
    WaitPolicy,
    derive_question_id,
    to_jsonable,
)
from agent_wait.host.adapter import IN_DOUBT_ACTIONS, PAYLOAD_KEY, WaitCall, question_from_value

CONFIRMATION = "adk_request_confirmation"
"""The name of the function call ADK asks for a tool confirmation with (and of its answer)."""

PARKED = {"status": "awaiting_confirmation"}
"""What a ``@wait`` call returns in the body's place while it waits (ADK replaces it on resume)."""

_HIDDEN = frozenset({"tool_context"})

DOUBT = "agent_wait_in_doubt"
"""The key of an in-doubt confirmation's payload (and of its answer's) that says which attempt
it asks about and carries the approval the run was given.

ADK hands a re-run tool only the latest confirmation of its call: the in-doubt answer then
stands where the approval was, so it carries the approval (``@wait`` needs it again to bind
the call) and its attempt (an answer to an earlier attempt's question is not one to a later's).
"""


class Parked(Exception):
    """Raised by :meth:`GoogleAdkAdapter.park` once the confirmation is requested.

    ADK pauses a run on a confirmation the tool *requested*, not on an exception: ``wait``
    catches this and returns :data:`PARKED` from the tool, so neither the body nor a
    ``decision`` parameter sees a value before the answer.
    """


def _tool_context(call: WaitCall) -> ToolContext:
    # An in-doubt question's arguments are its own: the context is the doubted call's.
    if call.doubts is not None:
        return _tool_context(call.doubts)
    for value in call.bound.arguments.values():
        if isinstance(value, ToolContext):
            return value
    raise TypeError(
        f"@wait on {call.name!r} was called without a ToolContext; give the function a "
        "`tool_context: ToolContext` parameter (ADK fills it in) and use it as an ADK tool"
    )


@dataclass(frozen=True)
class Request:
    """One ``adk_request_confirmation`` call, as read from a session's events."""

    id: str
    tool: str
    tool_call_id: str | None
    args: dict[str, Any]
    hint: str
    payload: Any
    agent: str | None
    invocation: str | None = None
    """The ADK invocation that asked (a resumable app resumes it by this id)."""

    @property
    def waits(self) -> bool:
        """True when ``@wait`` asked (the payload is its parked value)."""
        payload: object = self.payload
        return isinstance(payload, Mapping) and PAYLOAD_KEY in payload

    def question(self) -> Question:
        """The question this confirmation asks, with the agent and tool call as context."""
        if self.waits:
            asked = question_from_value(self.id, self.payload)
        else:
            body: dict[str, Any] = {"function": self.tool, "args": self.args, "hint": self.hint}
            schema = None
            if self.payload is not None:
                body["payload"] = to_jsonable(self.payload, f"confirmation {self.id!r} payload")
                schema = confirmation_schema(self.payload)
            asked = Question(
                question_id=self.id, question=body, policy=WaitPolicy(), answer_schema=schema
            )
        context = CallContext(
            node=self.agent,
            tool=self.tool,
            tool_call_id=self.tool_call_id,
            framework="google_adk",
            agent=self.agent,
        )
        return asked.model_copy(update={"context": context})


def _schema_of(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, Mapping):
        fields = cast("Mapping[str, Any]", value)
        return {"type": "object", "properties": {k: _schema_of(v) for k, v in fields.items()}}
    if isinstance(value, list):
        return {"type": "array"}
    return {}


def confirmation_schema(payload: Any) -> dict[str, Any]:
    """The answer a confirmation with ``payload`` takes: an action, and a payload shaped like it.

    ADK's payload is an example of the data the tool wants back (the answer's payload replaces
    it); its value types become the schema of ``payload``.
    """
    return {
        "type": "object",
        "properties": {"action": {"enum": ["approve", "reject"]}, "payload": _schema_of(payload)},
        "required": ["action"],
    }


def requests_in(events: Iterable[Event]) -> dict[str, Request]:
    """Every confirmation request in ``events``, by its id, in the order they were asked."""
    found: dict[str, Request] = {}
    for event in events:
        for call in event.get_function_calls():
            if call.name != CONFIRMATION or not call.id:
                continue
            args = call.args or {}
            original = cast("Mapping[str, Any]", args.get("originalFunctionCall") or {})
            confirmation = cast("Mapping[str, Any]", args.get("toolConfirmation") or {})
            found[call.id] = Request(
                id=call.id,
                tool=str(original.get("name") or "?"),
                tool_call_id=original.get("id") or None,
                args=dict(cast("Mapping[str, Any]", original.get("args") or {})),
                hint=str(confirmation.get("hint") or ""),
                payload=confirmation.get("payload"),
                agent=event.author or None,
                invocation=event.invocation_id or None,
            )
    return found


def answered_in(events: Iterable[Event]) -> set[str]:
    """The ids of the confirmation requests ``events`` answer."""
    return {
        response.id
        for event in events
        for response in event.get_function_responses()
        if response.name == CONFIRMATION and response.id
    }


def questions_in(events: Iterable[Event]) -> list[Question]:
    """The questions of the confirmations ``events`` ask and do not answer, in order.

    Args:
        events: What ``runner.run_async(...)`` yielded, or a session's ``events``.

    Returns:
        One :class:`~agent_wait.core.Question` per pending ``adk_request_confirmation``
        call; ``question_id`` is that call's id, the id its function response must carry.
    """
    events = list(events)
    answered = answered_in(events)
    return [r.question() for i, r in requests_in(events).items() if i not in answered]


def confirmation(request: Request, answer: Any) -> dict[str, Any]:
    """The ``ToolConfirmation`` an agent-wait answer gives ``request`` (camelCase, as ADK reads it).

    ``@wait`` questions: ``confirmed`` is whether the answer approves, and the whole answer is
    the payload ``@wait`` reads back (ADK's ``{"confirmed": bool}`` alone is read as approve or
    reject). Others: ``{"action": "approve" | "reject", "payload"?}``,
    or ADK's own ``{"confirmed": bool, "payload"?}``.

    Raises:
        InvalidAnswer: The answer is neither, or edits arguments the call does not have.
    """
    doubt = in_doubt_of(request.payload)
    if doubt is not None:
        action = (
            cast("Mapping[str, Any]", answer).get("action") if isinstance(answer, Mapping) else None
        )
        if action not in IN_DOUBT_ACTIONS:
            raise InvalidAnswer(
                "answer.action: an in-doubt question takes {'action': 'yes'} (it happened; its "
                "result may be given as answer.result) or {'action': 'no'} (it did not: it runs "
                f"once), got {answer!r}"
            )
        replied = {**cast("Mapping[str, Any]", answer), DOUBT: dict(doubt)}
        return {"confirmed": action == "yes", "payload": replied}
    if request.waits:
        if isinstance(answer, Mapping) and set(cast("Mapping[str, Any]", answer)) == {"confirmed"}:
            # ADK's own flag alone: read as the approve or reject it means.
            confirmed = cast("Mapping[str, Any]", answer)["confirmed"] is True
            answer = {"action": "approve" if confirmed else "reject"}
        _check_edits(request, answer)
        approved = (
            isinstance(answer, Mapping)
            and cast("Mapping[str, Any]", answer).get("action") == "approve"
        )
        return {"confirmed": approved, "payload": answer}
    if isinstance(answer, Mapping):
        given = cast("Mapping[str, Any]", answer)
        unknown = sorted(set(given) - {"action", "confirmed", "payload"})
        if unknown:
            raise InvalidAnswer(f"answer: {unknown} are not fields of a tool confirmation")
        action = given.get("action")
        if action in ("approve", "reject"):
            return {
                "confirmed": action == "approve",
                "payload": given.get("payload", request.payload),
            }
        if isinstance(given.get("confirmed"), bool) and action is None:
            return {
                "confirmed": given["confirmed"],
                "payload": given.get("payload", request.payload),
            }
    raise InvalidAnswer(
        f"answer: expected {{'action': 'approve' | 'reject'}} (with an optional 'payload') or "
        f"{{'confirmed': true | false}}, got {answer!r}"
    )


def in_doubt_of(payload: object) -> Mapping[str, Any] | None:
    """The :data:`DOUBT` part of a confirmation payload or answer; None for any other."""
    if not isinstance(payload, Mapping):
        return None
    doubt: object = cast("Mapping[str, Any]", payload).get(DOUBT)
    return cast("Mapping[str, Any]", doubt) if isinstance(doubt, Mapping) else None


def _check_edits(request: Request, answer: Any) -> None:
    # apply_answer refuses unknown edited arguments only when the tool runs again: refused here,
    # before the answer is saved to the session (where every later resume would trip on it).
    if not isinstance(answer, Mapping):
        return
    given = cast("Mapping[str, Any]", answer)
    edited = given.get("args")
    if given.get("action") != "approve" or edited is None:
        return
    if not isinstance(edited, Mapping):
        raise InvalidAnswer(f"answer.args: expected an object of arguments, got {edited!r}")
    question = cast("Mapping[str, Any]", cast("Mapping[str, Any]", request.payload)["question"])
    published = cast("Mapping[str, Any]", question.get("args") or {})
    unknown = sorted(set(cast("Mapping[str, Any]", edited)) - set(published))
    if unknown:
        raise InvalidAnswer(
            f"answer.args: {unknown} are not arguments of {request.tool!r} "
            f"(published: {sorted(published)})"
        )


def response_part(question_id: str, confirmed: Mapping[str, Any]) -> types.Part:
    """The ``adk_request_confirmation`` function response that answers ``question_id``."""
    return types.Part(
        function_response=types.FunctionResponse(
            id=question_id, name=CONFIRMATION, response=dict(confirmed)
        )
    )


class GoogleAdkAdapter:
    """:class:`agent_wait.host.adapter.FrameworkAdapter` for Google ADK function tools.

    A ``@wait`` tool parks with ``tool_context.request_confirmation(hint=<question>,
    payload=<parked value>)``; ADK ends the run with an ``adk_request_confirmation`` call,
    and on resume calls the tool again with ``tool_context.tool_confirmation`` set, whose
    payload is the answer.
    """

    name = "google_adk"

    def park(self, call: WaitCall) -> Any:
        """Request the confirmation and raise :class:`Parked`, or return the answer on resume.

        An in-doubt question (``call.doubts``) is answered only by a reply to its own attempt;
        a reply to a later attempt's question means this one was answered ``no``.
        """
        context = _tool_context(call)
        given = context.tool_confirmation
        answer: Mapping[str, Any] | None = None
        if given is not None:
            payload: object = given.payload
            if isinstance(payload, Mapping):
                answer = cast("Mapping[str, Any]", payload)
            else:
                # Confirmed from a client that sends only ADK's flag (adk web, the adk CLI).
                answer = {"action": "approve" if given.confirmed else "reject"}
        doubt = None if answer is None else in_doubt_of(answer)
        if call.doubts is None:
            if answer is not None:
                return answer if doubt is None else doubt["approval"]
            payload = call.payload
        else:
            attempt = call.args["attempt"]
            if doubt is not None and doubt["attempt"] == attempt:
                return {k: v for k, v in cast("Mapping[str, Any]", answer).items() if k != DOUBT}
            if doubt is not None and doubt["attempt"] > attempt:
                return {"action": "no"}
            approval = answer if doubt is None else doubt["approval"]
            payload = {**call.payload, DOUBT: {"attempt": attempt, "approval": approval}}
        context.request_confirmation(hint=_hint(call), payload=payload)
        # As ADK's own confirmations do: the placeholder result is not sent to the model.
        context.actions.skip_summarization = True
        raise Parked(call.name)

    async def apark(self, call: WaitCall) -> Any:
        """Async :meth:`park` (ADK's confirmation request is synchronous)."""
        return self.park(call)

    def execution_key(self, call: WaitCall) -> str:
        """The answered question of ``call``: its session, function and ADK function call id.

        ADK runs a confirmed tool again under the same function call id, in every redelivery
        and on every resume that re-runs it, so the key is the same there.
        """
        context = _tool_context(call)
        where = context.session.id
        return derive_question_id(where, call.name, {"function_call_id": context.function_call_id})

    def thread_id(self, call: WaitCall) -> str:
        """The ADK session id (the host runs every thread in the session of its id)."""
        return _tool_context(call).session.id

    def hidden_parameters(self, signature: inspect.Signature) -> frozenset[str]:
        """``tool_context``, which ADK fills in by name."""
        return frozenset(name for name in signature.parameters if name in _HIDDEN)

    def questions_in(self, result: Any) -> list[Question]:
        """See :func:`questions_in`."""
        return questions_in(result)


def _hint(call: WaitCall) -> str:
    question = call.payload["question"]
    if call.doubts is not None:
        return str(question["text"])
    if isinstance(question, Mapping) and "args" in question:
        args = cast("Mapping[str, Any]", question["args"])
        shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
        return f"Approve {call.name}({shown})?"
    return f"Approve {call.name}?"
