"""An agent-wait host as an A2A server: one task per thread, a parked run is input-required."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from a2a.helpers.proto_helpers import (
    get_data_parts,
    get_text_parts,
    new_data_part,
    new_message,
    new_task_from_user_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Role, TaskState
from pydantic_core import to_jsonable_python

from agent_wait.core import (
    Answer,
    Handled,
    Identity,
    Outcome,
    WaitEnvelope,
    answer_problem,
    log_safe,
)
from agent_wait.host import may_answer

logger = logging.getLogger("agent_wait.a2a")

HandleMessage = Callable[[Mapping[str, Any]], Awaitable[Handled]]
"""Runs or resumes one thread for an agent-wait message (a start or an answer): a framework's
``ahandle_message`` with its graph or agent bound, such as
``functools.partial(agent_wait.langgraph.ahandle_message, graph)``."""

QUESTION_MEDIA_TYPE = "application/vnd.agent-wait.question+json"
"""The media type of the data part that carries the question in an input-required status."""


def plain(value: Any) -> Any:
    """``value`` with whole floats as ints: A2A data parts carry every number as a double."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [plain(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    return value


def message_value(message: Message | None) -> Any:
    """What an A2A message says: its first data part, else its text parts joined, else None."""
    if message is None:
        return None
    data = get_data_parts(message.parts)
    if data:
        return plain(data[0])
    text = "\n".join(get_text_parts(message.parts))
    return text or None


def question_parts(envelope: WaitEnvelope, problem: str | None = None) -> list[Part]:
    """The status message's parts: the question as text, then all of it as a data part."""
    asked = envelope.question
    text = asked if isinstance(asked, str) else json.dumps(asked, ensure_ascii=False)
    if problem is not None:
        text = f"answer refused: {problem}\n{text}"
    data: dict[str, Any] = {
        "question_id": envelope.question_id,
        "question": to_jsonable_python(asked, fallback=str),
        "allowed_actions": list(envelope.allowed_actions),
        "answer_schema": envelope.answer_schema,
    }
    if problem is not None:
        data["refused"] = problem
    return [new_text_part(text), new_data_part(data, media_type=QUESTION_MEDIA_TYPE)]


class WaitExecutor(AgentExecutor):
    """Serves an agent-wait host over A2A: the task id is the thread id.

    A message without a task starts a run on a new thread. When the run parks, the task moves to
    ``input-required`` with the question as its status message (the text, and a data part of
    media type :data:`QUESTION_MEDIA_TYPE` with ``question_id``, ``question``,
    ``allowed_actions`` and ``answer_schema``). The next message on that task is the answer:
    its first data part (or its text) is checked by :func:`agent_wait.core.answer_problem`; a
    refused answer leaves the task ``input-required`` with the reason and the question, and
    nothing is sent to the run. An accepted one resumes the run as an agent-wait answer message.
    The task completes with the run's result as a data artifact, or fails with the error.

    Who answers is established for each request, as every answer path does: the user the app's
    authentication middleware put on the request (``request.user``, authenticated; recorded as
    ``identity_source`` ``a2a``), else, with ``tokens``, the person the request's
    ``Authorization: Bearer`` token maps to (``api-token``; a request without a known token is
    refused), else ``answered_by`` (``a2a``). That person must be allowed to answer the question
    (:func:`agent_wait.host.may_answer`: its approvers, and not the person who started the run);
    otherwise the task stays ``input-required`` with the reason, and nothing is sent to the run.
    A person established from the request who starts a task is its run's ``started_by``.

    Args:
        handle: Runs or resumes a thread for an agent-wait message (see :data:`HandleMessage`).
        answered_by: Who answers when the request names nobody (``answered_by`` of the answer
            message).
        tokens: Bearer tokens and the person (identity subject) each one stands for; with it,
            every request names its person by its token.
    """

    def __init__(
        self,
        handle: HandleMessage,
        *,
        answered_by: str = "a2a",
        tokens: Mapping[str, str] | None = None,
    ) -> None:
        self._handle = handle
        try:  # refused now, not on the first answer
            Answer(thread_id="-", question_id="-", answer=True, answered_by=answered_by)
        except ValueError as error:
            raise ValueError(
                f"answered_by: {answered_by!r} is not a name an answer carries"
            ) from error
        self._answered_by = answered_by
        self._tokens: dict[str, Identity] | None = None
        if tokens is not None:
            self._tokens = {}
            for token, subject in tokens.items():
                if not token:
                    raise ValueError(f"tokens: the token of {subject!r} is empty")
                try:
                    self._tokens[token] = Identity(subject=subject, source="api-token")
                except ValueError as error:
                    raise ValueError(
                        f"tokens: {subject!r} is not a person an answer names"
                    ) from error
        # The questions each parked task waits on, by task id. A server restarted while a task
        # waits learns them again from the host, which publishes a parked thread's questions
        # again (same ids) when it gets a start message.
        self._pending: dict[str, tuple[WaitEnvelope, ...]] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id
        context_id = context.context_id
        if task_id is None or context_id is None:  # the SDK fills both before executing
            raise ValueError("A2A request without a task id or context id")
        updater = TaskUpdater(event_queue, task_id, context_id)
        value = message_value(context.message)
        current = context.current_task
        if current is None or current.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            if context.message is None:
                raise ValueError(f"task {task_id}: a new task needs a message")
            who = self._who(context)
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
            await updater.start_work()
            start: dict[str, Any] = {"thread_id": task_id, "input": value}
            if isinstance(who, Identity) and who.subject != self._answered_by:
                start["started_by"] = who.subject  # a person the request names, not the default
            await self._run(updater, start)
            return
        pending = self._pending.get(task_id) or await self._republished(updater, task_id)
        if not pending:
            return
        envelope = pending[0]
        who = self._who(context)
        problem = who if isinstance(who, str) else _refusal(envelope, who)
        if problem is None:
            problem = answer_problem(envelope, value)
        if problem is not None:
            await self._ask(updater, envelope, problem)
            return
        assert isinstance(who, Identity)  # a refusal returned above
        reply = Answer.model_validate(
            {
                **envelope.reply_with.model_dump(),
                "answer": value,
                "answered_by": who.subject,
                "identity_source": who.source,
            }
        )
        await updater.start_work()
        await self._run(updater, reply.model_dump(mode="json", exclude_none=True))

    def _who(self, context: RequestContext) -> Identity | str:
        """Who the request is from, or why it names nobody who may answer."""
        user = context.call_context.user
        if user.is_authenticated and user.user_name:
            return Identity(subject=user.user_name, source="a2a")
        if self._tokens is None:
            return Identity(subject=self._answered_by, source="a2a")
        # The SDK's default context builder keeps the request's headers, lower-cased, in state.
        headers = cast("Mapping[str, str]", context.call_context.state.get("headers") or {})
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token:
            for known, identity in self._tokens.items():
                if hmac.compare_digest(known.encode(), token.strip().encode()):
                    return identity
        return (
            "the request has no known bearer token (Authorization: Bearer ...); nothing "
            "recorded or sent"
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # A parked thread holds no worker: cancelling the task forgets its question here; the
        # thread itself stays parked in the host's checkpoint.
        task_id = context.task_id
        context_id = context.context_id
        if task_id is None or context_id is None:
            raise ValueError("A2A request without a task id or context id")
        self._pending.pop(task_id, None)
        await TaskUpdater(event_queue, task_id, context_id).cancel()

    async def _republished(self, updater: TaskUpdater, task_id: str) -> tuple[WaitEnvelope, ...]:
        handled = await self._handle({"thread_id": task_id, "input": None})
        pending = handled.report.envelopes
        if handled.outcome is not Outcome.REPUBLISHED or not pending:
            await updater.failed(
                self._text(updater, f"task {task_id}: its thread waits on no question")
            )
            return ()
        self._pending[task_id] = pending
        return pending

    async def _run(self, updater: TaskUpdater, message: Mapping[str, Any]) -> None:
        task_id = updater.task_id
        try:
            handled = await self._handle(message)
        except Exception as error:  # noqa: BLE001 - the run's failure fails the task, with its reason
            self._pending.pop(task_id, None)
            await updater.failed(self._text(updater, f"{type(error).__name__}: {error}"))
            return
        if handled.outcome is Outcome.RESUME_FAILED:
            self._pending.pop(task_id, None)
            await updater.failed(self._text(updater, f"the run failed: {handled.error}"))
            return
        parked = handled.report.envelopes
        if handled.outcome is Outcome.HELD:
            # A framework that resumes only with every question answered keeps this answer
            # and waits on the others.
            held = self._pending.get(task_id, ())
            parked = tuple(e for e in held if e.question_id not in handled.answered)
        if parked:
            self._pending[task_id] = parked
            await self._ask(updater, parked[0])
            return
        if not handled.ran and task_id in self._pending:
            # The host refused the answer (its own check, a stale or unknown question): the
            # question stays open, with the host's reason.
            problem = handled.detail or handled.outcome.value
            await self._ask(updater, self._pending[task_id][0], problem)
            return
        self._pending.pop(task_id, None)
        if not handled.ran:
            await updater.failed(self._text(updater, handled.detail or handled.outcome.value))
            return
        result = to_jsonable_python(handled.result, fallback=str)
        await updater.add_artifact([new_data_part(result)], name="result")
        await updater.complete()

    async def _ask(
        self, updater: TaskUpdater, envelope: WaitEnvelope, problem: str | None = None
    ) -> None:
        message = new_message(
            question_parts(envelope, problem),
            context_id=updater.context_id,
            task_id=updater.task_id,
            role=Role.ROLE_AGENT,
        )
        await updater.requires_input(message)

    @staticmethod
    def _text(updater: TaskUpdater, text: str) -> Message:
        return new_message(
            [new_text_part(text)],
            context_id=updater.context_id,
            task_id=updater.task_id,
            role=Role.ROLE_AGENT,
        )


def _refusal(envelope: WaitEnvelope, who: Identity) -> str | None:
    """Why ``who`` may not answer the question (logged), or None if they may."""
    reason = may_answer(envelope, who)
    if reason is None:
        return None
    logger.info(
        "question %s of thread %s: answer by %s over A2A refused: %s",
        log_safe(envelope.question_id),
        log_safe(envelope.thread_id),
        log_safe(who.describe()),
        reason,
    )
    return f"{who.describe()} may not answer it: {reason}; nothing recorded or sent"
