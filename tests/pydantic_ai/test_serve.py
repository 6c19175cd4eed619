"""serve(): a Pydantic AI worker over the embedded entry point, answered with answer()."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
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
from agent_wait.core.host import AnswerTrust
from agent_wait.pydantic_ai import SqliteHistory, serve
from tests.pydantic_ai.scripted import Script
from tests.pydantic_ai.test_host import REFUND, Refunds
from tests.trust_serving import check_serve_runs_only_signed_replies


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


def test_serve_with_answer_secrets_runs_only_the_replies_it_signed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # secrets_env names the variable; during a rotation it lists the new secret first.
    monkeypatch.setenv("REFUND_ANSWER_SECRETS", f"{'n' * 40},{'o' * 40}")
    trust = AnswerTrust(secrets_env="REFUND_ANSWER_SECRETS")
    refunds = Refunds(Script(REFUND))
    history = SqliteHistory(tmp_path / "history.sqlite3")
    check_serve_runs_only_signed_replies(
        lambda entry, announce, stop: serve(
            refunds.agent,
            entry,
            announce,
            history=history,
            trust=trust,
            concurrency=1,
            wait=0.05,
            stop=stop,
        ),
        tmp_path / "inbox.sqlite3",
        {"thread_id": "order-4471", "input": "refund order-4471"},
        lambda: len(refunds.runs),
        caplog,
    )
    assert refunds.runs == [{"order_id": "order-4471", "amount": 41000}]
