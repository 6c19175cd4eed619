"""A remote A2A agent's input-required task as an agent-wait question, answered on that task."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from a2a.client import Client
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_message
from a2a.types import GetTaskRequest, Role, SendMessageRequest, Task, TaskState

from agent_wait.a2a._errors import NotWaitingForInput
from agent_wait.a2a._server import QUESTION_MEDIA_TYPE, plain
from agent_wait.core import (
    Announce,
    Answer,
    PublishReport,
    Question,
    WaitPolicy,
    apublish,
)


def _asked(task: Task) -> dict[str, Any]:
    """The data part the agent stated its question in (see ``QUESTION_MEDIA_TYPE``), or {}."""
    for part in task.status.message.parts:
        if part.HasField("data") and part.media_type == QUESTION_MEDIA_TYPE:
            data = plain(get_data_parts([part])[0])
            if isinstance(data, dict):
                return data  # pyright: ignore[reportUnknownVariableType]
    return {}


def question_of_task(
    task: Task, *, agent: str | None = None, policy: WaitPolicy | None = None
) -> Question:
    """The agent-wait question a task in ``input-required`` asks.

    The question is ``{"text", "task_id", "context_id"}`` (and ``agent`` when given): the status
    message's text and where to answer. An agent-wait A2A server's question data part gives the
    question id (stable across redeliveries), its ``answer_schema`` and ``allowed_actions``;
    from another agent the question id is the status message's id.

    Raises:
        NotWaitingForInput: The task is in another state.
    """
    state = task.status.state
    if state != TaskState.TASK_STATE_INPUT_REQUIRED:
        raise NotWaitingForInput(
            f"task {task.id}: state is {TaskState.Name(state)}, not TASK_STATE_INPUT_REQUIRED"
        )
    status = task.status.message
    asked = _asked(task)
    text = "\n".join(get_text_parts(status.parts))
    question: dict[str, Any] = {"text": text, "task_id": task.id, "context_id": task.context_id}
    if agent is not None:
        question["agent"] = agent
    actions = asked.get("allowed_actions")
    if policy is None and isinstance(actions, list) and actions:
        policy = WaitPolicy(allowed_actions=tuple(str(a) for a in actions))  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    question_id = str(asked.get("question_id") or status.message_id or f"{task.id}-input")
    schema = asked.get("answer_schema")
    return Question(
        question_id=question_id,
        question=question,
        policy=policy or WaitPolicy(),
        answer_schema=schema if isinstance(schema, dict) else None,  # pyright: ignore[reportUnknownArgumentType]
    )


async def publish_task(
    task: Task,
    announce: Announce = None,
    *,
    agent: str | None = None,
    policy: WaitPolicy | None = None,
    reply_to: Mapping[str, Any] | None = None,
) -> PublishReport:
    """Publish a task's input request as an agent-wait question on thread ``task.id``.

    It goes out through :func:`agent_wait.core.apublish`, so it shows in ``agent-wait inbox``
    and every configured channel; the answer message that comes back goes to
    :func:`answer_task`.

    Raises:
        NotWaitingForInput: The task is not in ``input-required``.
    """
    question = question_of_task(task, agent=agent, policy=policy)
    return await apublish([question], task.id, announce, reply_to=reply_to)


async def answer_task(client: Client, message: Answer | Mapping[str, Any]) -> Task:
    """Send an agent-wait answer to the remote task it answers, and return the task after it.

    The answer message's ``thread_id`` is the task id (see :func:`publish_task`); its
    ``answer`` goes as the follow-up message's data part. The returned task is
    ``input-required`` again when the agent refused the answer or asks another question.

    Raises:
        NotWaitingForInput: The task no longer waits for input (answered already, or ended).
    """
    reply = message if isinstance(message, Answer) else Answer.model_validate(message)
    task = await client.get_task(GetTaskRequest(id=reply.thread_id))
    if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
        raise NotWaitingForInput(
            f"task {task.id}: state is {TaskState.Name(task.status.state)}; the answer to "
            f"question {reply.question_id} was not sent"
        )
    follow_up = new_message(
        [new_data_part(reply.answer)],
        context_id=task.context_id,
        task_id=task.id,
        role=Role.ROLE_USER,
    )
    async for _ in client.send_message(SendMessageRequest(message=follow_up)):
        pass  # the stream ends when the task is final or waits again
    return await client.get_task(GetTaskRequest(id=task.id))
