"""One check for every framework's serve(): a worker with answer secrets runs only the replies
it signed, settles the others without running anything, and keeps the question answerable."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import SqliteAnnounce, SqliteEntry, SqliteQuestionStore
from agent_wait.host import answer
from tests.serving import Serve, serving, until


def check_serve_runs_only_signed_replies(
    serve: Serve,
    path: Path,
    start: dict[str, Any],
    runs: Callable[[], int],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``serve`` must park on ``start``, refuse an unsigned and a forged reply as
    ``unauthorized`` (acknowledged, nothing run), then resume on the reply ``answer()`` copies."""
    entry = SqliteEntry(path, poll_interval=0.02)
    entry.send(start)

    def refused() -> int:
        return sum(
            1
            for r in caplog.records
            if r.name == "agent_wait.core.serve" and r.getMessage().endswith(": unauthorized")
        )

    with (
        caplog.at_level(logging.INFO, logger="agent_wait"),
        serving(lambda stop: serve(entry, SqliteAnnounce(path), stop)) as reports,
        SqliteQuestionStore(path) as store,
    ):
        until(lambda: len(store.open_questions()) == 1, "the parked thread")
        [question] = store.open_questions()
        reply_with = question.envelope.reply_with.model_dump(mode="json")
        token: str = reply_with["token"]
        unsigned = {k: v for k, v in reply_with.items() if k != "token"}
        forged = {**reply_with, "token": token[:-1] + ("B" if token[-1] == "A" else "A")}
        for bad in (unsigned, forged):
            entry.send({**bad, "answer": {"action": "approve"}})
        until(lambda: refused() == 2, "two refused replies")
        assert runs() == 0
        assert [q.status for q in store.open_questions()] == ["open"]
        envelope = question.envelope
        answer(
            envelope.question_id,
            "approve",
            thread_id=envelope.thread_id,
            by="alice",
            store=store,
            entry=entry,
        )
        until(lambda: runs() == 1, "the resumed thread")
    [report] = reports
    assert (report.acknowledged, report.retried, report.dead_lettered) == (4, 0, 0)
    warned = [r for r in caplog.records if r.name == "agent_wait.host" and r.levelno >= 30]
    assert len(warned) == 2
    assert all("refused as unauthorized" in r.getMessage() for r in warned)
