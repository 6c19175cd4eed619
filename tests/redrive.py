"""One walk-through for every framework: an answer whose run a crash cut short is lost, and
``sweep(redrive_after=...)`` sends it again, once, after the bound."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent_wait.core import SqliteEntry, SqliteLedger, SqliteQuestionStore
from agent_wait.host import answer, sweep

ANSWERED_AT = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


def redriven_after_a_lost_answer(
    inbox: Path,
    messages_file: Path,
    question_id: str,
    crash: Callable[[Mapping[str, Any]], None],
) -> dict[str, Any]:
    """Answer ``question_id`` (asked into the sqlite inbox ``inbox``) by alice; hand the answer
    to ``crash``, a worker that dies in its run; lose the message (acknowledged, as a host from
    before runs were continued did, or lost); then sweep with ``redrive_after="PT5M"``.

    Returns:
        The message the sweep sent again, received from the entry point, for the framework's
        host to handle: the same answer, sent once, past the bound only.
    """
    with SqliteQuestionStore(inbox) as store, SqliteEntry(messages_file) as messages:
        answer(question_id, "approve", by="alice", store=store, entry=messages, at=ANSWERED_AT)
        [received] = messages.receive(1)
        crash(received.message)
        assert messages.ack(received)

        def swept(minutes: int) -> list[str]:
            report = sweep(
                store=store,
                entry=messages,
                now=ANSWERED_AT + timedelta(minutes=minutes),
                redrive_after="PT5M",
                ledger=SqliteLedger(inbox),
            )
            return [q.envelope.question_id for q in report.redriven]

        assert swept(2) == []  # not yet past the bound
        assert swept(7) == [question_id]
        assert swept(8) == []  # once, however often the sweep runs
        [again] = messages.receive(1)
        assert again.message["answer"] == {"action": "approve"}
        assert messages.ack(again)
        return again.message
