"""The whole Pydantic AI host of seed section 4 in one call: load, run or resume, store, publish.

Pydantic AI keeps no state between runs, so everything :func:`handle_message` needs to know
about a parked thread lives in its stored history: the pending calls are the last response's
tool calls that have no result yet, and the ``DeferredToolRequests`` the run parked on (their
kinds and ``@wait`` payloads) plus any answers held so far are recorded in that response's
``metadata["agent_wait"]``, which Pydantic AI keeps for the application and never sends to
the model. Any :class:`HistoryStore` therefore suffices.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from pydantic import TypeAdapter

from agent_wait.core import (
    PAYLOAD_KEY,
    Announce,
    Answer,
    Handled,
    InvalidAnswer,
    Outcome,
    PublishReport,
    Question,
    StartMessage,
    apublish,
    canonical_json,
    parse_message,
    publish,
    to_jsonable,
)
from agent_wait.pydantic_ai._adapter import deferred_requests, questions_in
from agent_wait.pydantic_ai._history import HistoryStore
from agent_wait.pydantic_ai._results import deferred_results
from pydantic_ai import Agent, AgentRunResult, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import ModelMessage, ModelResponse

Clock = Callable[[], datetime]
_REQUESTS: TypeAdapter[DeferredToolRequests] = TypeAdapter(DeferredToolRequests)
# handle_message supplies these itself; a caller passing one would silently fight it.
_RESERVED = frozenset({"user_prompt", "message_history", "deferred_tool_results"})


@dataclass(frozen=True)
class Parked:
    """A thread that waits on deferred calls, read from its stored history.

    Attributes:
        requests: The pending calls (only those still without a result).
        answers: Answers received so far, held until every pending call has one.
    """

    requests: DeferredToolRequests
    answers: dict[str, Any]

    @property
    def ids(self) -> list[str]:
        """The pending question ids, in publish order."""
        return [q.question_id for q in questions_in(self.requests)]

    @property
    def unanswered(self) -> list[Question]:
        """The pending questions that have no held answer yet."""
        return [q for q in questions_in(self.requests) if q.question_id not in self.answers]


def _last_response(messages: Sequence[ModelMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], ModelResponse):
            return index
    return None


def _unprocessed(messages: Sequence[ModelMessage], index: int) -> list[str]:
    response = cast("ModelResponse", messages[index])
    # Results answer calls in the requests that follow the response (tool returns and retries).
    answered = {
        cast("str", getattr(part, "tool_call_id", None))
        for message in messages[index + 1 :]
        for part in message.parts
        if part.part_kind in ("tool-return", "retry-prompt")
    }
    return [call.tool_call_id for call in response.tool_calls if call.tool_call_id not in answered]


def parked(thread_id: str, messages: Sequence[ModelMessage]) -> Parked | None:
    """What the stored history of a thread is parked on, or None when it is not parked.

    Raises:
        ValueError: The history ends in unprocessed tool calls that :func:`handle_message` did
            not record (it was written by other code), so their kinds are unknown.
    """
    index = _last_response(messages)
    if index is None:
        return None
    pending = _unprocessed(messages, index)
    if not pending:
        return None
    metadata = cast("ModelResponse", messages[index]).metadata or {}
    record = metadata.get(PAYLOAD_KEY)
    if not isinstance(record, Mapping) or "pending" not in record:
        raise ValueError(
            f"thread {thread_id!r}: the stored history ends in tool calls without results "
            f"{pending} that handle_message did not record; store histories of parked runs "
            "through handle_message (or finish the run) before handing the thread to it"
        )
    record = cast("Mapping[str, Any]", record)
    requests = _REQUESTS.validate_python(record["pending"])
    # Only calls still without a result are pending, whatever the record says.
    resolved = DeferredToolResults(
        approvals={
            c.tool_call_id: True for c in requests.approvals if c.tool_call_id not in pending
        },
        calls={c.tool_call_id: None for c in requests.calls if c.tool_call_id not in pending},
    )
    requests = requests.remaining(resolved)
    if requests is None:
        return None
    answers = {
        k: v
        for k, v in cast("Mapping[str, Any]", record.get("answers") or {}).items()
        if k in pending
    }
    return Parked(requests, answers)


def recorded(
    messages: Sequence[ModelMessage], requests: DeferredToolRequests, answers: Mapping[str, Any]
) -> list[ModelMessage]:
    """``messages`` with the parked requests and held answers recorded on the last response."""
    history = list(messages)
    index = _last_response(history)
    if index is None:
        raise ValueError("a parked history has no model response to record the pending calls on")
    response = cast("ModelResponse", history[index])
    record = {"pending": _REQUESTS.dump_python(requests, mode="json"), "answers": dict(answers)}
    history[index] = dataclasses.replace(
        response, metadata={**(response.metadata or {}), PAYLOAD_KEY: record}
    )
    return history


def _asked(messages: Sequence[ModelMessage], question_id: str) -> bool:
    return any(
        call.tool_call_id == question_id
        for message in messages
        if isinstance(message, ModelResponse)
        for call in message.tool_calls
    )


def _after_run(result: AgentRunResult[Any]) -> list[ModelMessage]:
    messages = result.all_messages()
    requests = deferred_requests(result)
    return messages if requests is None else recorded(messages, requests, {})


def _prompt(message: StartMessage) -> str | None:
    value = message.input
    if value is None or isinstance(value, str):
        return value
    # A structured start message reaches the model as its JSON text.
    return canonical_json(value)


@dataclass(frozen=True)
class _Plan:
    """What to do with one message, decided before anything runs."""

    thread_id: str
    outcome: Outcome
    prompt: str | None = None
    results: DeferredToolResults | None = None
    save: list[ModelMessage] | None = None
    republish: list[Question] = field(default_factory=list[Question])
    detail: str | None = None

    @property
    def runs(self) -> bool:
        return self.outcome in (Outcome.STARTED, Outcome.RESUMED)


def _plan(message: Answer | StartMessage, messages: list[ModelMessage]) -> _Plan:
    thread_id = message.thread_id
    state = parked(thread_id, messages)
    if isinstance(message, StartMessage):
        if state is not None:
            return _Plan(
                thread_id,
                Outcome.REPUBLISHED,
                republish=state.unanswered,
                detail=f"thread {thread_id!r} is parked; its pending questions were published again",
            )
        return _Plan(thread_id, Outcome.STARTED, prompt=_prompt(message))
    return _plan_answer(message, messages, state)


def _plan_answer(message: Answer, messages: list[ModelMessage], state: Parked | None) -> _Plan:
    thread_id, question_id = message.thread_id, message.question_id
    # Republishing what is still pending on a duplicate is harmless (consumers deduplicate on
    # question_id) and is how the questions of a resume whose strict publish failed get out when
    # the host lets the answer be redelivered.
    still = [] if state is None else state.unanswered
    if state is None or question_id not in state.ids:
        if _asked(messages, question_id):
            return _Plan(
                thread_id,
                Outcome.DUPLICATE,
                republish=still,
                detail=f"question {question_id!r} of thread {thread_id!r} is no longer pending; nothing ran",
            )
        return _Plan(
            thread_id,
            Outcome.UNKNOWN_QUESTION,
            detail=f"thread {thread_id!r} never asked question {question_id!r}; nothing ran",
        )
    if question_id in state.answers:
        return _Plan(
            thread_id,
            Outcome.DUPLICATE,
            republish=still,
            detail=f"question {question_id!r} of thread {thread_id!r} is already answered (the first "
            "answer stands); nothing ran",
        )
    try:
        answer = to_jsonable(message.answer, "answer")
        deferred_results(state.requests, _answer(thread_id, question_id, answer))
    except (InvalidAnswer, TypeError) as error:
        return _Plan(thread_id, Outcome.INVALID_ANSWER, detail=str(error))
    answers = {**state.answers, question_id: answer}
    remaining = [i for i in state.ids if i not in answers]
    if remaining:
        return _Plan(
            thread_id,
            Outcome.HELD,
            save=recorded(messages, state.requests, answers),
            detail=f"answer to {question_id!r} held; thread {thread_id!r} resumes once {remaining} "
            "are answered too",
        )
    results = deferred_results(
        state.requests, *(_answer(thread_id, i, answers[i]) for i in state.ids)
    )
    return _Plan(thread_id, Outcome.RESUMED, results=results)


def _answer(thread_id: str, question_id: str, answer: Any) -> Answer:
    return Answer(thread_id=thread_id, question_id=question_id, answer=answer)


def _parse(
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
) -> Answer | StartMessage:
    if isinstance(message, Answer | StartMessage):
        return message
    return parse_message(message)


def _check_options(run_options: Mapping[str, Any]) -> None:
    reserved = sorted(set(run_options) & _RESERVED)
    if reserved:
        raise TypeError(
            f"handle_message() sets {reserved} itself from the message and the stored history; "
            "do not pass them"
        )


def _skipped(plan: _Plan, report: PublishReport) -> Handled:
    return Handled(plan.outcome, None, report, plan.detail)


def handle_message(
    agent: Agent[Any, Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    history: HistoryStore,
    reply_to: Mapping[str, Any] | None = None,
    strict: bool = False,
    clock: Clock | None = None,
    **run_options: Any,
) -> Handled:
    """Handle one inbound message for a Pydantic AI agent: run or resume, store, publish.

    A start message (no ``question_id``) runs the agent with ``input`` as the prompt (a string
    as is, anything else as its JSON text) on the thread's stored history. An answer resumes
    the call it names with ``DeferredToolResults`` built by :func:`deferred_results`. After
    every run the history is saved under the thread id **before** anything is published or
    returned, then one envelope per call the run parked on is published.

    Guarantees (every case but a run leaves the history as it was, and runs nothing):

    - An answer whose question is no longer pending (answered, late, or a stale one from an
      earlier cycle) is ``DUPLICATE``; one the thread never asked is ``UNKNOWN_QUESTION``.
      Pydantic AI itself would run an approved tool again on a duplicate resumed from the
      pre-resume history; storing first is what makes the duplicate a no-op.
    - A start message arriving while the thread is parked is ``REPUBLISHED``: the pending
      questions go out again with their same ids.
    - Pydantic AI resumes only with every pending call answered, so an answer to one of
      several pending calls is stored in the history and ``HELD``; the run resumes once, when
      the last one arrives. A second answer to a held question is ``DUPLICATE``.
    - An answer whose ``args`` do not fit the call is ``INVALID_ANSWER``, refused before it is
      held or resumed.

    Messages of one thread must be handled one at a time (a FIFO group, a partition, or a
    lock per thread): two concurrent answers would both read the same stored history.

    Args:
        agent: The agent; its ``output_type`` includes ``DeferredToolRequests``.
        message: The inbound message: a mapping, JSON text, or a parsed
            :class:`~agent_wait.core.Answer` / :class:`~agent_wait.core.StartMessage`.
        announce: Where questions are published (an announcer, a list, a registered name, or
            None for the configured default).
        history: Where the thread's message history is stored, by thread id.
        reply_to: A hint for where answers go, copied into every envelope.
        strict: Raise :class:`~agent_wait.core.AnnounceFailed` if a delivery failed (the
            history is already stored), so the host leaves the message unacknowledged; its
            redelivery republishes the thread's pending questions without running anything.
        clock: Returns "now" (aware); ``expires_at`` is measured from it.
        **run_options: Passed to ``agent.run_sync`` (``deps``, ``model``, ``usage_limits``...).

    Returns:
        :class:`~agent_wait.core.Handled`: the outcome, the ``AgentRunResult`` (None when
        nothing ran), the publish report and, when nothing ran, why.

    Raises:
        pydantic.ValidationError: The message is neither a valid answer nor start message.
        TypeError: ``run_options`` names an argument handle_message sets itself.
    """
    _check_options(run_options)
    parsed = _parse(message)
    messages = history.load(parsed.thread_id)
    plan = _plan(parsed, messages)
    if not plan.runs:
        if plan.save is not None:
            history.save(plan.thread_id, plan.save)
        report = publish(
            plan.republish, plan.thread_id, announce, reply_to=reply_to, strict=strict, clock=clock
        )
        return _skipped(plan, report)
    result = agent.run_sync(
        plan.prompt,
        message_history=messages or None,
        deferred_tool_results=plan.results,
        **run_options,
    )
    history.save(plan.thread_id, _after_run(result))
    report = publish(
        questions_in(result),
        plan.thread_id,
        announce,
        reply_to=reply_to,
        strict=strict,
        clock=clock,
    )
    return Handled(plan.outcome, result, report)


async def ahandle_message(
    agent: Agent[Any, Any],
    message: Mapping[str, Any] | str | bytes | Answer | StartMessage,
    announce: Announce = None,
    *,
    history: HistoryStore,
    reply_to: Mapping[str, Any] | None = None,
    strict: bool = False,
    clock: Clock | None = None,
    **run_options: Any,
) -> Handled:
    """Async :func:`handle_message`: ``await agent.run(...)``, announcers delivered concurrently.

    The history store is called in a worker thread, so a blocking store does not stall the
    event loop. Same arguments, guarantees and result as :func:`handle_message`.
    """
    _check_options(run_options)
    parsed = _parse(message)
    messages = await asyncio.to_thread(history.load, parsed.thread_id)
    plan = _plan(parsed, messages)
    if not plan.runs:
        if plan.save is not None:
            await asyncio.to_thread(history.save, plan.thread_id, plan.save)
        report = await apublish(
            plan.republish, plan.thread_id, announce, reply_to=reply_to, strict=strict, clock=clock
        )
        return _skipped(plan, report)
    result = await agent.run(
        plan.prompt,
        message_history=messages or None,
        deferred_tool_results=plan.results,
        **run_options,
    )
    await asyncio.to_thread(history.save, plan.thread_id, _after_run(result))
    report = await apublish(
        questions_in(result),
        plan.thread_id,
        announce,
        reply_to=reply_to,
        strict=strict,
        clock=clock,
    )
    return Handled(plan.outcome, result, report)
