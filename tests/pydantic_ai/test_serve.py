"""serve(): a Pydantic AI worker over the embedded entry point, answered with answer()."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_wait.core import (
    ServeReport,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    answer,
)
from agent_wait.pydantic_ai import SqliteHistory, serve
from tests.pydantic_ai.scripted import Script
from tests.pydantic_ai.test_host import REFUND, Refunds


def until(condition: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_serve_parks_and_resumes_threads(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    refunds = Refunds(Script(REFUND))
    entry = SqliteEntry(path, poll_interval=0.02)
    for n in range(3):
        entry.send({"thread_id": f"order-{n}", "input": "refund order-4471"})
    stop = threading.Event()
    reports: list[ServeReport] = []
    history = SqliteHistory(tmp_path / "history.sqlite3")
    worker = threading.Thread(
        target=lambda: reports.append(
            serve(
                refunds.agent,
                entry,
                SqliteAnnounce(path),
                history=history,
                concurrency=1,
                wait=0.05,
                stop=stop,
            )
        )
    )
    worker.start()
    try:
        with SqliteQuestionStore(path) as store:
            until(lambda: len(store.open_questions()) == 3, "three parked threads")
            for question in store.open_questions():
                envelope = question.envelope
                answer(
                    envelope.question_id,
                    "approve",
                    thread_id=envelope.thread_id,
                    by="bot",
                    store=store,
                    entry=entry,
                )
            until(lambda: len(refunds.runs) == 3, "three resumed threads")
            assert [q.status for q in store.open_questions()] == []
    finally:
        stop.set()
        worker.join(timeout=60)
    assert reports[0].acknowledged == 6
    assert (reports[0].retried, reports[0].dead_lettered) == (0, 0)
    assert refunds.runs == [{"order_id": "order-4471", "amount": 41000}] * 3
