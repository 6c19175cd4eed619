"""Two real A2A processes on loopback: the README's agent-wait server and the SDK's client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from a2a.client import Client
from a2a.helpers.proto_helpers import get_data_parts, new_data_message
from a2a.types import GetTaskRequest, Role, SendMessageRequest, Task, TaskState

from agent_wait.a2a import QUESTION_MEDIA_TYPE, NotWaitingForInput, answer_task, publish_task
from agent_wait.core import Answer, SqliteAnnounce, WaitEnvelope

ROOT = Path(__file__).resolve().parents[2]


async def send(client: Client, data: Any, task: Task | None = None) -> Task:
    """Send ``data`` (on ``task`` when given) and return the task once the stream ends."""
    message = new_data_message(
        data,
        role=Role.ROLE_USER,
        task_id=task.id if task else None,
        context_id=task.context_id if task else None,
    )
    task_id = task.id if task else None
    async for response in client.send_message(SendMessageRequest(message=message)):
        if response.HasField("task"):
            task_id = response.task.id
        elif response.HasField("status_update"):
            task_id = response.status_update.task_id
    assert task_id, "the server answered without a task"
    return await client.get_task(GetTaskRequest(id=task_id))


def asked(task: Task) -> dict[str, Any]:
    (part,) = [p for p in task.status.message.parts if p.media_type == QUESTION_MEDIA_TYPE]
    return get_data_parts([part])[0]


def result(task: Task) -> dict[str, Any]:
    (artifact,) = task.artifacts
    return get_data_parts(artifact.parts)[0]


async def test_a_parked_run_is_input_required_and_its_answer_completes_the_task(
    client: Client,
) -> None:
    task = await send(client, {"amount": 41000})

    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    question = asked(task)
    assert question["question"] == "Refund 41000?"
    assert question["answer_schema"]["required"] == ["approved"]
    assert len(question["question_id"]) == 32  # LangGraph's interrupt id

    done = await send(client, {"approved": True}, task)

    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert result(done) == {"amount": 41000, "approved": True}


async def test_an_out_of_schema_answer_is_refused_and_the_question_stays_open(
    client: Client,
) -> None:
    task = await send(client, {"amount": 250})
    question_id = asked(task)["question_id"]

    refused = await send(client, {"approved": "yes"}, task)

    assert refused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    again = asked(refused)
    assert again["question_id"] == question_id
    assert again["refused"].startswith("answer.approved:"), again["refused"]
    assert "answer refused: answer.approved" in refused.status.message.parts[0].text
    assert not refused.artifacts

    forged = await send(client, {"approved": False, "action": "approve"}, refused)

    assert forged.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "action" in asked(forged)["refused"]

    done = await send(client, {"approved": False}, forged)

    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert result(done) == {"amount": 250, "approved": False}


async def test_a_remote_input_request_is_an_inbox_question_whose_answer_completes_the_task(
    client: Client, server_url: str, tmp_path: Path
) -> None:
    inbox = tmp_path / "inbox.db"
    task = await send(client, {"amount": 990})

    report = await publish_task(task, SqliteAnnounce(inbox), agent=server_url)

    assert report.ok, report.failures
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "agent-wait"), "inbox", "--path", str(inbox), "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    (item,) = json.loads(listed.stdout)
    envelope = WaitEnvelope.model_validate(item["envelope"])
    assert envelope.thread_id == task.id
    assert envelope.question["text"] == "Refund 990?"
    assert envelope.question["agent"] == server_url
    assert envelope.answer_schema == asked(task)["answer_schema"]
    assert envelope.question_id == asked(task)["question_id"]

    refused = await answer_task(
        client, {**envelope.reply_with.model_dump(), "answer": {"approved": 1}}
    )
    assert refused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED

    done = await answer_task(
        client,
        Answer.model_validate({**envelope.reply_with.model_dump(), "answer": {"approved": True}}),
    )

    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert result(done) == {"amount": 990, "approved": True}
    with pytest.raises(NotWaitingForInput, match="TASK_STATE_COMPLETED; the answer to question"):
        await answer_task(client, {**envelope.reply_with.model_dump(), "answer": {"approved": 1}})


async def test_a_run_that_fails_fails_its_task_with_the_error(client: Client) -> None:
    task = await send(client, {"currency": "EUR"})  # the graph reads state["amount"]

    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert task.status.message.parts[0].text == "KeyError: 'amount'"
    assert not task.artifacts
