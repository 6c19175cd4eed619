"""The audit trail of a question answered as a person would, and run by the LangGraph worker.

``agent-wait audit`` prints what happened to the question (asked, delivered, answered, resumed,
executed) and verifies the hash chain and that the call ran with the approved arguments; an
edited entry and a run with other arguments are both caught.
"""

from __future__ import annotations

import inspect
import json
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from agent_wait.core._audit import DEFAULT_AUDIT_TABLE, SqliteAuditLog, verify
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.host import _wait
from agent_wait.langgraph import serve
from tests.answering.conftest import Deployment
from tests.answering.test_langgraph import transfer_graph

Deploy = Callable[..., Deployment]


def run_approved(deploy: Deploy, thread: str, *answer: str) -> tuple[Deployment, str, list[Any]]:
    ran: list[Any] = []
    host = deploy(serve, transfer_graph(ran))
    host.start(thread, {"account": "DE44 5001", "amount": 120})
    assert host.handled(thread) == "started"
    question_id = host.question(thread).envelope.question_id
    done = host.answer(question_id, "approve", *answer)
    assert done.returncode == 0, done.stderr
    assert host.handled(thread) == "resumed"
    return host, question_id, ran


def kinds(question_id: str) -> list[str]:
    with SqliteAuditLog(default_inbox_path()) as log:
        return [e.kind for e in log.entries(question_id)]


def test_the_record_of_an_edited_approval_verifies_and_names_what_ran(deploy: Deploy) -> None:
    host, question_id, ran = run_approved(deploy, "audit-1", "--answer", '{"args": {"amount": 95}}')
    assert ran == [("DE44 5001", 95)]
    assert kinds(question_id) == ["asked", "delivered", "answered", "executed", "resumed"]
    shown = host.cli("audit", question_id)
    assert shown.returncode == 0, shown.stderr
    assert "chain verified" in shown.stdout
    assert '"by": "alice"' in shown.stdout
    exported = host.cli("audit", "--export", "jsonl", "--since", "2000-01-01T00:00:00Z")
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    mine = [line for line in lines if line["question_id"] == question_id]
    answered = next(line for line in mine if line["kind"] == "answered")
    executed = next(line for line in mine if line["kind"] == "executed")
    assert executed["data"]["call_digest"] == answered["data"]["call_digest"]
    assert executed["data"]["outcome"] == "returned"


def test_an_edited_entry_is_detected(deploy: Deploy) -> None:
    host, question_id, _ = run_approved(deploy, "audit-2")
    with sqlite3.connect(default_inbox_path()) as connection:
        connection.execute(
            f"UPDATE \"{DEFAULT_AUDIT_TABLE}\" SET data = json_set(data, '$.by', 'mallory') "
            "WHERE question_id = ? AND kind = 'answered'",
            (question_id,),
        )
    shown = host.cli("audit", question_id)
    assert shown.returncode == 1
    assert "(answered" in shown.stderr
    assert "does not match its hash: it was edited" in shown.stderr


def test_a_call_run_with_other_arguments_than_approved_is_flagged(
    deploy: Deploy, monkeypatch: pytest.MonkeyPatch
) -> None:
    approve = _wait.apply_answer

    def tampered(
        call: Any, answer: Any, decision: str | None
    ) -> tuple[bool, inspect.BoundArguments]:
        # Fault injection: a host that runs the body with an amount nobody approved.
        run, bound = approve(call, answer, decision)
        bound.arguments["amount"] = 99_999
        return run, bound

    monkeypatch.setattr(_wait, "apply_answer", tampered)
    host, question_id, ran = run_approved(deploy, "audit-3")
    assert ran == [("DE44 5001", 99_999)]
    with SqliteAuditLog(default_inbox_path()) as log:
        problems = verify(log.entries(question_id))
    assert len(problems) == 1
    assert "issue_transfer ran with arguments other than the approved ones" in problems[0]
    shown = host.cli("audit", question_id)
    assert shown.returncode == 1
    assert "ran with arguments other than the approved ones" in shown.stderr
