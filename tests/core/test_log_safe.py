"""log_safe: values from senders cannot forge or colour log lines."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import SqliteEntry, log_safe
from agent_wait.host import serve_entry


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("order-4471", "order-4471"),
        ("commande-été/ß", "commande-été/ß"),
        ("t\n2026-01-01 INFO forged", "t\\n2026-01-01 INFO forged"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("a\rb\x00c\u2028d\u202ee", "a\\rb\\x00c\\u2028d\\u202ee"),
        (42, "42"),
    ],
)
def test_unprintable_characters_are_escaped(value: object, shown: str) -> None:
    assert log_safe(value) == shown


def test_a_logged_value_stays_on_its_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        logging.getLogger("agent_wait.test").info("thread %s", log_safe("t\nINFO forged"))
    assert caplog.text.count("\n") == 1


FORGED = "t\n2026-12-03 09:00:00 INFO agent_wait: approved by admin\x1b[2K"


def test_a_thread_id_cannot_forge_a_line_in_the_worker_and_entry_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = SqliteEntry(tmp_path / "inbox.sqlite3", max_attempts=1, poll_interval=0.02)
    entry.send({"thread_id": FORGED, "input": None})
    stop = threading.Event()

    def handle(message: dict[str, Any]) -> object:
        stop.set()  # the message in hand is still settled: failed, then dead-lettered
        raise ConnectionError("down")

    with caplog.at_level(logging.DEBUG, logger="agent_wait"):
        serve_entry(handle, entry, wait=0.05, stop=stop)
    [dead] = entry.dead_letters()
    assert dead.thread_id == FORGED
    lines = [record.getMessage() for record in caplog.records]
    assert sum("of thread t\\n2026-12-03" in line for line in lines) >= 2, lines
    assert not [line for line in lines if "\n" in line or "\x1b" in line]
