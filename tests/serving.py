"""Waiting on a worker: poll until something is true, run serve() in a thread for a block, probe
its health endpoints, read what an embedded entry point holds, serve one start until it parks,
and the check every framework's serve() passes: it parks threads and resumes them on their
answers."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent_wait.core import (
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    StoredQuestion,
    hookimpl,
)
from agent_wait.host import ServeReport, ServeStatus, answer
from agent_wait.testing import registered_plugin

# A framework's serve() over these, with everything else bound: (entry, announce, stop).
Serve = Callable[[SqliteEntry, SqliteAnnounce, threading.Event], ServeReport]


def until(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Wait for ``condition`` to return something true, and return it; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def all_sent(path: Path) -> list[dict[str, Any]]:
    """Every message the entry point holds, in order: received and acknowledged, one by one."""
    found: list[dict[str, Any]] = []
    with SqliteEntry(path) as messages:
        while batch := messages.receive(100):
            for received in batch:
                found.append(received.message)
                assert messages.ack(received)
    return found


@contextmanager
def serving(serve: Callable[[threading.Event], ServeReport]) -> Iterator[list[ServeReport]]:
    """Run ``serve(stop)`` in a thread during the block; then stop it and wait for it.

    Yields the list its report is put in once it has stopped (empty if it raised).
    """
    stop = threading.Event()
    reports: list[ServeReport] = []
    worker = threading.Thread(target=lambda: reports.append(serve(stop)))
    worker.start()
    try:
        yield reports
    finally:
        stop.set()
        worker.join(timeout=60)


def probe(address: tuple[str, int], path: str) -> tuple[int, dict[str, Any]]:
    """GET a health endpoint: its status code and JSON body."""
    try:
        with urllib.request.urlopen(f"http://{address[0]}:{address[1]}{path}", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@contextmanager
def health_endpoints(serve: Callable[[threading.Event], ServeReport]) -> Iterator[tuple[str, int]]:
    """Run ``serve(stop)`` (given ``health="127.0.0.1:0"``) during the block; yields the address
    its health endpoints listen on."""
    statuses: list[ServeStatus] = []

    class Started:
        @hookimpl
        def worker_started(self, status: ServeStatus) -> None:
            statuses.append(status)

    with registered_plugin(Started(), "test-health-endpoints"), serving(serve):
        [status] = until(lambda: statuses, "the worker started")
        assert status.health_address is not None
        yield status.health_address


def serve_until_parked(
    serve: Serve, path: Path, start: dict[str, Any]
) -> tuple[StoredQuestion, ServeReport]:
    """Send ``start`` to the embedded entry point in ``path`` (a failed message is handed out
    again at once) and run ``serve`` until its thread parked on one question; then stop it.

    Returns that question and the worker's report.
    """
    entry = SqliteEntry(path, poll_interval=0.02, retry_delay=0)
    entry.send(start)
    with (
        serving(lambda stop: serve(entry, SqliteAnnounce(path), stop)) as reports,
        SqliteQuestionStore(path) as store,
    ):
        [question] = until(lambda: store.open_questions(), "the thread parked")
    entry.close()
    [report] = reports
    return question, report


def check_serve_parks_and_resumes(
    serve: Serve, path: Path, starts: list[dict[str, Any]], runs: Callable[[], int]
) -> None:
    """``serve`` must park a thread on each of ``starts``, then resume each once on the answer
    ``answer()`` sends, acknowledging every message and retrying none."""
    entry = SqliteEntry(path, poll_interval=0.02)
    for start in starts:
        entry.send(start)
    with (
        serving(lambda stop: serve(entry, SqliteAnnounce(path), stop)) as reports,
        SqliteQuestionStore(path) as store,
    ):
        until(lambda: len(store.open_questions()) == len(starts), "every thread parked")
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
        until(lambda: runs() == len(starts), "every thread resumed")
        assert [q.status for q in store.open_questions()] == []
    [report] = reports
    assert (report.acknowledged, report.retried, report.dead_lettered) == (2 * len(starts), 0, 0)
