"""OpenAI Agents SDK tool approvals, answered with ``agent-wait answer`` as a person would.

The agent is the SDK's documented approval pattern (``@function_tool(needs_approval=True)``)
over an offline scripted model; the worker is ``agent_wait.openai_agents.serve`` on the
embedded sqlite entry point, with the runs kept in SQLite.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, function_tool

from agent_wait.core import default_entry
from agent_wait.openai_agents import SqliteRuns, serve
from tests.answering.conftest import Deployment
from tests.answering.test_langgraph import accepted, refused
from tests.openai_agents.scripted import ScriptedModel

Deploy = Callable[..., Deployment]


def files_agent(ran: list[str], *paths: str) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    model = ScriptedModel("delete_file", [{"path": p} for p in paths])
    return Agent("files", model=model, tools=[delete_file])


def test_a_parked_run_is_answered_from_the_cli_and_a_duplicate_runs_nothing(
    deploy: Deploy, tmp_path: Path
) -> None:
    ran: list[str] = []
    host = deploy(serve, files_agent(ran, "/tmp/report.csv"), runs=SqliteRuns(tmp_path / "r.db"))
    host.start("files-1", "clean up")
    assert host.handled("files-1") == "started"
    question = host.question("files-1").envelope
    assert question.question == {"function": "delete_file", "args": {"path": "/tmp/report.csv"}}
    assert question.context is not None
    assert (question.context.node, question.context.tool) == ("files", "delete_file")
    assert question.context.tool_call_id == question.question_id
    assert ran == []

    accepted(host.answer(question.question_id, "approve"), question.question_id)
    assert host.handled("files-1") == "resumed"
    assert ran == ["/tmp/report.csv"]
    assert host.questions("files-1") == []

    # The same answer delivered again (a redelivery): nothing runs.
    with default_entry() as messages:
        messages.send(
            {
                "thread_id": "files-1",
                "question_id": question.question_id,
                "answer": {"action": "approve"},
            }
        )
    assert host.handled("files-1") == "duplicate"
    assert ran == ["/tmp/report.csv"]


def test_reject_from_the_cli_never_runs_the_tool_and_an_edit_is_refused(
    deploy: Deploy, tmp_path: Path
) -> None:
    ran: list[str] = []
    host = deploy(serve, files_agent(ran, "/tmp/a.csv"), runs=SqliteRuns(tmp_path / "r.db"))
    host.start("files-2", "clean up")
    assert host.handled("files-2") == "started"
    question_id = host.question("files-2").envelope.question_id

    edited = '{"action": "approve", "args": {"path": "/etc/passwd"}}'
    refused(host.answer(question_id, "--json", edited), "args")
    assert host.stored(question_id).is_open
    assert ran == []

    accepted(host.answer(question_id, "reject", "--answer", '{"reason": "keep it"}'), question_id)
    assert host.handled("files-2") == "resumed"
    assert ran == []
