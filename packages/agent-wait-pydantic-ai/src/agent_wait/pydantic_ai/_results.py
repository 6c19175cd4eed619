"""Build Pydantic AI's ``DeferredToolResults`` from agent-wait answer messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pydantic import ValidationError

from agent_wait.core import Answer, InvalidAnswer, canonical_json, storable_problem
from agent_wait.host.adapter import IN_DOUBT_ACTIONS
from agent_wait.pydantic_ai._adapter import (
    answer_metadata,
    deferred_requests,
    in_doubt_metadata,
    in_doubt_of,
    is_ours,
    question_id_of,
    recorded_args,
    takes_decision,
)
from pydantic_ai import (
    AgentRunResult,
    DeferredToolRequests,
    DeferredToolResults,
    ModelRetry,
    ToolApproved,
    ToolDenied,
    ToolFailed,
)
from pydantic_ai.messages import ToolCallPart


def _published_args(call: ToolCallPart, metadata: dict[str, Any] | None) -> dict[str, Any]:
    if is_ours(metadata):
        question: object = cast("dict[str, Any]", metadata)["question"]
        if isinstance(question, Mapping):
            args: object = cast("Mapping[str, Any]", question).get("args")
            if isinstance(args, Mapping):
                return dict(cast("Mapping[str, Any]", args))
        return {}
    return call.args_as_dict()


def _edited_args(
    edited: object, field: str, call: ToolCallPart, published: Mapping[str, Any]
) -> dict[str, Any] | None:
    if edited is None:
        return None
    if not isinstance(edited, Mapping):
        raise InvalidAnswer(f"answer.{field}: expected an object of arguments, got {edited!r}")
    unknown = sorted(set(cast("Mapping[str, Any]", edited)) - set(published))
    if unknown:
        raise InvalidAnswer(
            f"answer.{field}: {unknown} are not arguments of {call.tool_name!r} (published: {sorted(published)})"
        )
    return dict(cast("Mapping[str, Any]", edited))


def _approving(answer: object) -> Mapping[str, Any] | None:
    if isinstance(answer, Mapping):
        data = cast("Mapping[str, Any]", answer)
        if data.get("action") == "approve":
            return data
    return None


_APPROVED = "tool-approved"
_DENIED = "tool-denied"
_APPROVAL_FIELDS = {_APPROVED: {"kind", "override_args"}, _DENIED: {"kind", "message"}}


def _pydantic_ai_approval(answer: object) -> dict[str, Any] | None:
    """``answer`` in one of Pydantic AI's own approval forms, as agent-wait's action answer.

    ``true`` / ``false`` (``approvals[id] = True``) and the JSON form of ``ToolApproved`` /
    ``ToolDenied`` (``{"kind": "tool-approved", "override_args": {...}}``, ``{"kind":
    "tool-denied", "message": text}``) become ``{"action": "approve"}`` (``override_args`` as
    ``args``) or ``{"action": "reject"}`` (the message as ``reason``); None for any other
    answer.

    Raises:
        InvalidAnswer: A ``kind`` form with other fields, ``override_args`` that are not an
            object, or a message that is not text.
    """
    if isinstance(answer, bool):
        return {"action": "approve" if answer else "reject"}
    if not isinstance(answer, Mapping):
        return None
    data = cast("Mapping[str, Any]", answer)
    kind = data.get("kind")
    if kind not in _APPROVAL_FIELDS:
        return None
    extra = sorted(set(data) - _APPROVAL_FIELDS[kind])
    if extra:
        raise InvalidAnswer(
            f"answer: {extra} are not fields of {kind!r} (it takes {sorted(_APPROVAL_FIELDS[kind])})"
        )
    if kind == _APPROVED:
        override = data.get("override_args")
        if override is not None and not isinstance(override, Mapping):
            raise InvalidAnswer(
                f"answer.override_args: expected an object of arguments, got {override!r}"
            )
        return {"action": "approve", **({} if override is None else {"args": override})}
    message = data.get("message")
    if message is not None and not isinstance(message, str):
        raise InvalidAnswer(f"answer.message: expected the text the model reads, got {message!r}")
    return {"action": "reject", **({} if message is None else {"reason": message})}


def approval_for(
    call: ToolCallPart, metadata: dict[str, Any] | None, answer: object
) -> tuple[ToolApproved | ToolDenied, dict[str, Any] | None]:
    """The approval result and the metadata that answer one approval call.

    Pydantic AI's own forms mean what its ``DeferredToolResults.approvals`` makes of them:
    ``true`` and ``{"kind": "tool-approved"}`` approve, with ``"override_args"`` the arguments
    the tool runs with instead; ``false`` and ``{"kind": "tool-denied"}`` deny, the model
    reading ``"message"`` (Pydantic AI's default denial text without one).

    - A ``@wait`` tool with a decision parameter is approved whatever the answer; the answer
      rides in metadata (a Pydantic AI form as its action answer: ``true`` is ``{"action":
      "approve"}``, ``{"kind": "tool-denied", "message": m}`` is ``{"action": "reject",
      "reason": m}``).
    - ``{"action": "approve"}`` approves; the answer rides in metadata (a ``@wait`` tool reads
      it, including ``args`` edits). For any other tool ``args`` become
      ``ToolApproved(override_args=<call args updated with them>)``.
    - Anything else denies: the tool is not called and the model receives the answer, text as
      is (``"Deleting files is not allowed"``), anything else as its JSON.
    - An in-doubt question (a run died inside the call's approved body) takes ``{"action":
      "yes"}`` or ``{"action": "no"}`` only; either approves the call's re-run, which reads it.

    Raises:
        InvalidAnswer: ``answer["args"]`` (or ``override_args``) is not an object or names
            arguments the call lacks, a Pydantic AI form has fields it does not take, or an
            in-doubt question's answer is neither yes nor no.
    """
    doubt = in_doubt_of(metadata)
    if doubt is not None:
        # A host-recorded call runs again with the arguments its approved run had.
        again = ToolApproved(override_args=recorded_args(metadata))
        return again, in_doubt_metadata(doubt, _in_doubt_reply(answer))
    native = _pydantic_ai_approval(answer)
    if takes_decision(metadata):
        return ToolApproved(), answer_metadata(answer if native is None else native)
    if native is not None:
        return _native_approval(call, metadata, native)
    approve = _approving(answer)
    if approve is not None:
        published = _published_args(call, metadata)
        edited = _edited_args(approve.get("args"), "args", call, published)
        if edited is None or is_ours(metadata):
            return ToolApproved(), answer_metadata(answer)
        return ToolApproved(override_args={**published, **edited}), answer_metadata(answer)
    return ToolDenied(denial_text(answer)), None


def _in_doubt_reply(answer: object) -> Mapping[str, Any]:
    action = (
        cast("Mapping[str, Any]", answer).get("action") if isinstance(answer, Mapping) else None
    )
    if action not in IN_DOUBT_ACTIONS:
        raise InvalidAnswer(
            "answer.action: an in-doubt question takes {'action': 'yes'} (it happened; its "
            "result may be given as answer.result) or {'action': 'no'} (it did not: it runs "
            f"once), got {answer!r}"
        )
    return cast("Mapping[str, Any]", answer)


def _native_approval(
    call: ToolCallPart, metadata: dict[str, Any] | None, native: dict[str, Any]
) -> tuple[ToolApproved | ToolDenied, dict[str, Any] | None]:
    if native["action"] == "reject":
        reason = native.get("reason")
        return (ToolDenied() if reason is None else ToolDenied(reason)), None
    published = _published_args(call, metadata)
    override = _edited_args(native.get("args"), "override_args", call, published)
    if is_ours(metadata):
        # A @wait tool reads its answer, and any edited arguments, from the metadata.
        return ToolApproved(), answer_metadata(native)
    # Pydantic AI's override_args replace the call's arguments, as ToolApproved documents.
    return ToolApproved(override_args=override), None


def denial_text(answer: object) -> str:
    """What the model reads for a denied call: a text answer as is, anything else as JSON."""
    return answer if isinstance(answer, str) else canonical_json(answer)


_CALL_OUTCOMES = {"model-retry": ModelRetry, "tool-failed": ToolFailed}


def call_result(answer: object) -> object:
    """The ``DeferredToolResults.calls`` entry for the answer to a ``CallDeferred`` call.

    Pydantic AI's own JSON form of a failed call, exactly ``{"kind": "model-retry", "message":
    text}`` or ``{"kind": "tool-failed", "message": text}``, becomes ``ModelRetry`` (the model is
    asked to try again, within the tool's retry budget) or ``ToolFailed`` (a terminal failure the
    model sees); any other answer is the call's result.
    """
    if not isinstance(answer, Mapping):
        return answer
    data = cast("Mapping[str, Any]", answer)
    if set(data) == {"kind", "message"}:
        outcome = _CALL_OUTCOMES.get(data["kind"])
        if outcome is not None:
            message = data["message"]
            if not isinstance(message, str):
                raise InvalidAnswer(
                    f"answer.message: a {data['kind']!r} result needs the text the model "
                    f"reads, got {message!r}"
                )
            return outcome(message)
    return data


def _answer_message(index: int, item: Answer | Mapping[str, Any]) -> Answer:
    if isinstance(item, Answer):
        return item
    try:
        return Answer.model_validate(item)
    except ValidationError as error:
        raise ValueError(f"answers[{index}]: {error}") from error


def deferred_results(
    pending: DeferredToolRequests | AgentRunResult[Any], *answers: Answer | Mapping[str, Any]
) -> DeferredToolResults:
    """Build the ``DeferredToolResults`` that resume a parked run with these answers.

    Approval calls (``@wait``, ``ApprovalRequired``, ``requires_approval=True``) get
    ``ToolApproved`` with the answer in ``metadata[question_id]``, or ``ToolDenied`` with the
    answer's text (see :func:`approval_for`); ``CallDeferred`` calls get the answer as their
    result, in ``calls[question_id]``, or a retry or failure (see :func:`call_result`). Which is
    which comes from ``DeferredToolRequests.kind``.

    Pydantic AI resumes only when every pending call is answered; pass all of them (or use
    :func:`handle_message`, which holds partial answers until the rest arrive).

    Args:
        pending: The ``DeferredToolRequests`` the run parked on, or its ``AgentRunResult``.
        *answers: Answer messages (``{"thread_id", "question_id", "answer"}``, or
            :class:`~agent_wait.core.Answer`); each answer in a message's ``more_answers``
            answers its call too.

    Returns:
        The results, for ``agent.run(..., deferred_tool_results=...)``.

    Raises:
        ValueError: The run is not parked, an answer message is malformed, names a question
            that is not pending, or answers one twice.
        InvalidAnswer: An approving answer's ``args`` do not fit the call, or an answer is
            not storable unchanged (see :func:`~agent_wait.core.storable_problem`).
    """
    requests = deferred_requests(pending)
    if requests is None:
        raise ValueError(
            "pending: the run finished without deferred tool calls; there is nothing to answer"
        )
    calls = _by_question(requests)
    results = DeferredToolResults()
    for index, item in enumerate(answers):
        message = _answer_message(index, item)
        # A message's more_answers answer further calls of the run, as the first one does.
        for place, entry in enumerate(message.entries()):
            field = (
                f"answers[{index}]" if place == 0 else f"answers[{index}].more_answers[{place - 1}]"
            )
            question_id = entry.question_id
            call = calls.get(question_id)
            if call is None:
                raise ValueError(
                    f"{field}.question_id: {question_id!r} is not pending; pending: {sorted(calls)}"
                )
            if call.tool_call_id in results.approvals or call.tool_call_id in results.calls:
                raise ValueError(f"{field}.question_id: {question_id!r} is answered twice")
            problem = storable_problem(entry.answer, f"{field}.answer")
            if problem:
                # The answer rides in the stored history; one the store cannot keep unchanged
                # would fail (or come back altered) after the tool ran.
                raise InvalidAnswer(problem)
            _add(results, requests, call, entry.answer)
    return results


def checked_results(
    requests: DeferredToolRequests, answers: Mapping[str, Any]
) -> DeferredToolResults:
    """:func:`deferred_results` for answers already checked: pending, once each, storable.

    What the host resumes with, by question id; it parsed each answer message and checked it
    before, so only what depends on the call is left (an approval's ``args``, a failure's
    message).

    Raises:
        InvalidAnswer: As :func:`approval_for` and :func:`call_result`.
    """
    calls = _by_question(requests)
    results = DeferredToolResults()
    for question_id, answer in answers.items():
        _add(results, requests, calls[question_id], answer)
    return results


def _by_question(requests: DeferredToolRequests) -> dict[str, ToolCallPart]:
    """The pending calls by question id (an in-doubt question's is not its call's id)."""
    return {
        question_id_of(call, requests.metadata.get(call.tool_call_id)): call
        for call in (*requests.approvals, *requests.calls)
    }


def _add(
    results: DeferredToolResults, requests: DeferredToolRequests, call: ToolCallPart, answer: Any
) -> None:
    question_id = call.tool_call_id
    if requests.kind(question_id) == "approval":
        approval, metadata = approval_for(call, requests.metadata.get(question_id), answer)
        results.approvals[question_id] = approval
        if metadata is not None:
            results.metadata[question_id] = metadata
    else:
        results.calls[question_id] = call_result(answer)
