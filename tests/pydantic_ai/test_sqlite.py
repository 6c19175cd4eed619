"""The Pydantic AI host publishing to the embedded sqlite inbox, and a consumer answering from it."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext

from agent_wait.core import (
    MemoryAnnounce,
    Outcome,
    QuestionStatus,
    SqliteQuestionStore,
    WaitPolicy,
    announcer,
)
from agent_wait.pydantic_ai import SqliteHistory, ahandle_message, handle_message, wait
from tests.pydantic_ai.scripted import Script, seen_by_model

NOW = datetime(2026, 9, 11, 9, 0, 0, tzinfo=UTC)
DEFAULT = {"action": "reject", "reason": "no response within P3D"}
START = {"thread_id": "order-4471", "input": "refund order-4471"}


def refund_agent(script: Script, runs: list[int]) -> Agent[None, Any]:
    agent = Agent(script.model, output_type=[str, DeferredToolRequests])

    @agent.tool
    @wait(WaitPolicy(timeout="P3D", default=DEFAULT, tags={"approver_group": "finance"}))
    async def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
        runs.append(amount)
        return "refunded"

    return agent


def test_one_row_per_question_and_the_default_answer_after_the_deadline(
    script: Callable[..., Script], tmp_path: Path
) -> None:
    runs: list[int] = []
    agent = refund_agent(
        script(("issue_refund", {"order_id": "order-4471", "amount": 41000})), runs
    )
    path = tmp_path / "inbox.sqlite3"
    sqlite = announcer("sqlite", path=path)
    history = SqliteHistory(tmp_path / "history.sqlite3")

    started = handle_message(agent, START, sqlite, history=history, clock=lambda: NOW)
    assert started.report.ok
    # A redelivered start message republishes; the row stays the first publish's.
    later = NOW + timedelta(hours=1)
    again = handle_message(agent, START, sqlite, history=history, clock=lambda: later)
    assert again.outcome is Outcome.REPUBLISHED
    assert again.report.ok

    with SqliteQuestionStore(path) as inbox:
        [item] = inbox.open_questions()
        assert item.envelope == started.report.envelopes[0]
        assert item.envelope.question_id == "issue_refund-1-0"
        assert item.envelope.expires_at == "2026-09-14T09:00:00Z"
        assert inbox.open_questions_past(NOW + timedelta(days=2)) == []
        [overdue] = inbox.open_questions_past(NOW + timedelta(days=3, seconds=1))

        # The consumer honours the deadline by sending the default: an ordinary answer.
        envelope = overdue.envelope
        reply = {**envelope.reply_with.model_dump(), "answer": envelope.default}
        resumed = handle_message(agent, json.dumps(reply), sqlite, history=history)
        assert resumed.outcome is Outcome.RESUMED
        assert runs == []
        seen = seen_by_model(resumed.result.output)["issue_refund-1-0"]
        assert seen["outcome"] == "denied"
        assert json.loads(seen["content"]) == DEFAULT
        assert inbox.transition(
            envelope.thread_id, envelope.question_id, QuestionStatus.ANSWERED, by="test"
        ).won
        assert inbox.open_questions() == []

    # The default sent twice (a consumer retry) runs nothing.
    duplicate = handle_message(agent, json.dumps(reply), sqlite, history=history)
    assert duplicate.outcome is Outcome.DUPLICATE


async def test_async_host_to_sqlite_and_memory_together(
    script: Callable[..., Script], tmp_path: Path
) -> None:
    runs: list[int] = []
    calls = [("issue_refund", {"order_id": f"o-{i}", "amount": 5000 + i}) for i in range(3)]
    agent = refund_agent(script(*calls), runs)
    path = tmp_path / "inbox.sqlite3"
    memory = MemoryAnnounce()
    announce = [announcer("sqlite", path=path), memory]
    history = SqliteHistory(tmp_path / "history.sqlite3")

    started = await ahandle_message(agent, START, announce, history=history)
    assert started.report.ok
    assert len(started.report.deliveries) == 6
    with SqliteQuestionStore(path) as inbox:
        rows = inbox.open_questions()
    assert sorted(item.envelope.question_id for item in rows) == sorted(memory.question_ids)
    assert len(rows) == 3

    for index, item in enumerate(rows):
        reply = {**item.envelope.reply_with.model_dump(), "answer": {"action": "approve"}}
        handled = await ahandle_message(agent, reply, announce, history=history)
        expected = Outcome.RESUMED if index == len(rows) - 1 else Outcome.HELD
        assert handled.outcome is expected
    assert sorted(runs) == [5000, 5001, 5002]
