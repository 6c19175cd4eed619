"""serve(): a Pydantic AI worker over the embedded entry point, answered with answer()."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_wait.core.host import AnswerTrust
from agent_wait.pydantic_ai import SqliteHistory, serve
from tests.pydantic_ai.scripted import Script
from tests.pydantic_ai.test_host import REFUND, Refunds
from tests.serving import check_serve_parks_and_resumes
from tests.trust_serving import check_serve_runs_only_signed_replies


def test_serve_parks_and_resumes_threads(tmp_path: Path) -> None:
    refunds = Refunds(Script(REFUND))
    history = SqliteHistory(tmp_path / "history.sqlite3")
    check_serve_parks_and_resumes(
        lambda entry, announce, stop: serve(
            refunds.agent, entry, announce, history=history, concurrency=1, wait=0.05, stop=stop
        ),
        tmp_path / "inbox.sqlite3",
        [{"thread_id": f"order-{n}", "input": "refund order-4471"} for n in range(3)],
        lambda: len(refunds.runs),
    )
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
