"""A worker's figures as metrics: settled messages by outcome, in flight, ready, lag."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from agent_wait.core import SqliteEntry
from agent_wait.host import serve_entry
from tests.opentelemetry.conftest import Metrics

SQLITE = {"agent_wait.entry": "sqlite"}


def test_a_worker_reports_its_messages_in_flight_readiness_and_lag(
    tmp_path: Path, recorded: Metrics
) -> None:
    entry = SqliteEntry(tmp_path / "inbox.sqlite3", poll_interval=0.02, max_attempts=1)
    for thread in ("t-1", "t-2", "broken"):
        entry.send({"thread_id": thread, "input": None})
    during: list[dict[Any, Any]] = []
    stop = threading.Event()
    handled: list[str] = []

    def handle(message: dict[str, Any]) -> None:
        handled.append(message["thread_id"])
        if len(handled) == 1:
            during.append(Metrics.read())  # one message in hand, two waiting behind it
        if len(handled) == 3:
            stop.set()
        if message["thread_id"] == "broken":
            raise RuntimeError("cannot handle it")

    serve_entry(handle, entry, concurrency=1, wait=0.05, stop=stop)

    [points] = during
    key = tuple(sorted(SQLITE.items()))
    assert points[("agent_wait.worker.in_flight", key)].value == 1
    assert points[("agent_wait.worker.ready", key)].value == 1
    assert points[("agent_wait.worker.oldest_waiting", key)].value >= 0
    for outcome, count in (("acknowledged", 2), ("dead_lettered", 1), ("retried", 0)):
        assert (
            recorded.added(
                "agent_wait.worker.messages", **SQLITE, **{"agent_wait.outcome": outcome}
            )
            == count
        ), outcome
