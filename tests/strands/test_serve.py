"""serve(): a Strands worker over the embedded entry point, answered with answer()."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import (
    ServeReport,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
    answer,
)
from agent_wait.strands import serve
from tests.strands.conftest import Threads
from tests.strands.fake_model import ScriptedModel
from tests.strands.test_host import REFUND, Tools
from tests.trust_serving import check_serve_runs_only_signed_replies


def until(condition: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_serve_parks_and_resumes_threads(
    tmp_path: Path, factory: Callable[[ScriptedModel, Sequence[Any]], Threads]
) -> None:
    path = tmp_path / "inbox.sqlite3"
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    entry = SqliteEntry(path, poll_interval=0.02)
    for n in range(3):
        entry.send({"thread_id": f"order-{n}", "input": "refund order-4471"})
    stop = threading.Event()
    reports: list[ServeReport] = []
    worker = threading.Thread(
        target=lambda: reports.append(
            serve(threads, entry, SqliteAnnounce(path), concurrency=1, wait=0.05, stop=stop)
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
            until(lambda: len(tools.runs) == 3, "three resumed threads")
    finally:
        stop.set()
        worker.join(timeout=60)
    assert reports[0].acknowledged == 6
    assert (reports[0].retried, reports[0].dead_lettered) == (0, 0)
    assert tools.runs == ["refund order-4471 41000"] * 3


def test_serve_with_answer_secrets_runs_only_the_replies_it_signed(
    tmp_path: Path,
    factory: Callable[[ScriptedModel, Sequence[Any]], Threads],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The environment configures every host and serve() in the process; the first secret signs.
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", f"{'n' * 40},{'o' * 40}")
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    check_serve_runs_only_signed_replies(
        lambda entry, announce, stop: serve(
            threads, entry, announce, concurrency=1, wait=0.05, stop=stop
        ),
        tmp_path / "inbox.sqlite3",
        {"thread_id": "order-4471", "input": "refund order-4471"},
        lambda: len(tools.runs),
        caplog,
    )
    assert tools.runs == ["refund order-4471 41000"]
