"""The Strands host publishing to the embedded sqlite inbox, and a consumer answering from it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from strands import ToolContext, tool

from agent_wait.core import Outcome, QuestionStatus, SqliteQuestionStore, WaitPolicy, announcer
from agent_wait.strands import handle_message, wait
from tests.strands.conftest import Threads
from tests.strands.fake_model import Call, ScriptedModel

Factory = Callable[[ScriptedModel, Sequence[Any]], Threads]
NOW = datetime(2026, 9, 11, 9, 0, 0, tzinfo=UTC)
DEFAULT = {"action": "reject", "reason": "no response within P3D"}


def test_sqlite_inbox_one_row_per_question_and_the_default_answer_after_the_deadline(
    factory: Factory, tmp_path: Path
) -> None:
    runs: list[int] = []

    @tool(context=True)
    @wait(WaitPolicy(timeout="P3D", default=DEFAULT, tags={"approver_group": "finance"}))
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        runs.append(amount)
        return "refunded"

    model = ScriptedModel([Call("issue_refund", {"order_id": "order-4471", "amount": 41000})])
    threads = factory(model, [issue_refund])
    path = tmp_path / "inbox.sqlite3"
    sqlite = announcer("sqlite", path=path)
    start = {"thread_id": "order-4471", "input": "refund order-4471"}

    started = handle_message(threads, start, sqlite, clock=lambda: NOW)
    assert started.report.ok
    # A redelivered start message republishes; the row stays the first publish's.
    again = handle_message(threads, start, sqlite, clock=lambda: NOW + timedelta(hours=1))
    assert again.outcome is Outcome.REPUBLISHED
    assert again.report.ok

    with SqliteQuestionStore(path) as inbox:
        [item] = inbox.open_questions()
        assert item.envelope == started.report.envelopes[0]
        assert item.envelope.expires_at == "2026-09-14T09:00:00Z"
        assert inbox.open_questions_past(NOW + timedelta(days=2)) == []
        [overdue] = inbox.open_questions_past(NOW + timedelta(days=3, seconds=1))

        # The consumer honours the deadline by sending the default: an ordinary answer.
        envelope = overdue.envelope
        answer = {**envelope.reply_with.model_dump(), "answer": envelope.default}
        resumed = handle_message(threads, json.dumps(answer), sqlite)
        assert resumed.outcome is Outcome.RESUMED
        assert inbox.transition(
            envelope.thread_id, envelope.question_id, QuestionStatus.ANSWERED, by="test"
        ).won
        assert inbox.open_questions() == []

    assert runs == []
    assert json.loads(model.tool_results[-1]["text"]) == DEFAULT
    sqlite.close()
