"""A task's input request as an agent-wait question, from agents other than agent-wait's."""

from __future__ import annotations

import pytest
from a2a.helpers.proto_helpers import new_text_part
from a2a.types import Message, Role, Task, TaskState, TaskStatus

from agent_wait.a2a import NotWaitingForInput, question_of_task
from agent_wait.core import WaitPolicy


def task_in(state: TaskState) -> Task:
    status = Message(message_id="m-7", role=Role.ROLE_AGENT, parts=[new_text_part("Which city?")])
    return Task(id="t-1", context_id="c-1", status=TaskStatus(state=state, message=status))


def test_a_foreign_agents_text_request_is_a_question_named_by_its_status_message() -> None:
    question = question_of_task(task_in(TaskState.TASK_STATE_INPUT_REQUIRED), agent="http://x/")

    assert question.question_id == "m-7"
    assert question.question == {
        "text": "Which city?",
        "task_id": "t-1",
        "context_id": "c-1",
        "agent": "http://x/",
    }
    assert question.answer_schema is None
    assert question.policy == WaitPolicy()


def test_a_task_that_waits_for_nothing_is_refused_naming_its_state() -> None:
    with pytest.raises(NotWaitingForInput, match="task t-1: state is TASK_STATE_WORKING"):
        question_of_task(task_in(TaskState.TASK_STATE_WORKING))
