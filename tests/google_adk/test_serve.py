"""End to end: serve parks a thread kept in sqlite, the CLI answers it from another process,
serve resumes it, and a duplicate answer runs nothing; serve(stream=...) streams every run to a
callback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService
from google.adk.tools import FunctionTool

from agent_wait.core import Outcome, SqliteAnnounce, SqliteEntry, SqliteQuestionStore
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.google_adk import handle_message, serve
from tests.google_adk.conftest import runner_for
from tests.serving import check_serve_parks_and_resumes, serve_until_parked, serving, until


def refunds(runs: list[tuple[str, int]], sessions: Path) -> Runner:
    """A runner whose model calls ``issue_refund`` (gated by ADK's confirmation) once per
    thread, its sessions in the sqlite file ``sessions``."""

    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        runs.append((order_id, amount))
        return "ok"

    tool = FunctionTool(issue_refund, require_confirmation=True)
    calls = [("issue_refund", {"order_id": "o-77", "amount": 5})]
    return runner_for([tool], calls, DatabaseSessionService(f"sqlite+aiosqlite:///{sessions}"))


def function_calls(events: list[tuple[str, Any]], thread_id: str) -> list[str | None]:
    """The names of the function calls in the ADK events streamed for ``thread_id``."""
    return [c.name for t, e in events if t == thread_id for c in e.get_function_calls()]


def function_responses(events: list[tuple[str, Any]], thread_id: str) -> list[str | None]:
    """The names of the function responses in the ADK events streamed for ``thread_id``."""
    return [r.name for t, e in events if t == thread_id for r in e.get_function_responses()]


def test_serve_resumes_the_cli_s_answer_and_a_duplicate_runs_nothing(tmp_path: Path) -> None:
    runs: list[tuple[str, int]] = []

    def runner() -> Runner:
        return refunds(runs, tmp_path / "sessions.sqlite3")

    inbox = default_inbox_path()
    entry = SqliteEntry(inbox, poll_interval=0.02)
    entry.send({"thread_id": "adk-e2e", "input": "refund o-77"})
    with (
        serving(
            lambda stop: serve(
                runner(), entry, SqliteAnnounce(inbox), concurrency=1, wait=0.05, stop=stop
            )
        ) as reports,
        SqliteQuestionStore(inbox) as store,
    ):
        (question,) = until(store.open_questions, "the thread parked")
        question_id = question.envelope.question_id
        assert runs == []
        # The command in its own process, as an operator runs it.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run(
            [sys.executable, "-m", "agent_wait.host._cli", "answer", question_id, "approve"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        until(lambda: runs, "serve resumed the thread")
    [report] = reports
    assert (report.acknowledged, report.retried, report.dead_lettered) == (2, 0, 0)
    assert runs == [("o-77", 5)]

    # The same answer again, to a fresh Runner on the same sessions: nothing runs.
    duplicate = {"thread_id": "adk-e2e", "question_id": question_id, "answer": "approve"}
    handled = handle_message(runner(), duplicate, SqliteAnnounce(inbox))
    assert handled.outcome is Outcome.DUPLICATE
    assert runs == [("o-77", 5)]


def test_serve_streams_every_run_on_each_worker_thread_and_parks_and_resumes(
    tmp_path: Path,
) -> None:
    runs: list[tuple[str, int]] = []
    events: list[tuple[str, Any]] = []
    check_serve_parks_and_resumes(
        lambda entry, announce, stop: serve(
            refunds(runs, tmp_path / "sessions.sqlite3"),
            entry,
            announce,
            concurrency=2,
            wait=0.05,
            stop=stop,
            stream=lambda thread_id, event: events.append((thread_id, event)),
        ),
        tmp_path / "inbox.sqlite3",
        [{"thread_id": f"order-{n}", "input": "refund o-77"} for n in range(2)],
        lambda: len(runs),
    )
    assert runs == [("o-77", 5)] * 2
    for thread_id in ("order-0", "order-1"):
        calls = function_calls(events, thread_id)
        assert "adk_request_confirmation" in calls, f"the start of {thread_id} was not streamed"
        responses = function_responses(events, thread_id)
        assert "issue_refund" in responses, f"the resume of {thread_id} was not streamed"


def test_serve_with_a_stream_that_raises_publishes_nothing_of_that_run_and_hands_it_out_again(
    tmp_path: Path,
) -> None:
    runs: list[tuple[str, int]] = []
    raised: list[Any] = []
    # The questions open when the second attempt streamed its first event.
    open_on_retry: list[int] = []
    runner = refunds(runs, tmp_path / "sessions.sqlite3")
    path = tmp_path / "inbox.sqlite3"

    def show(thread_id: str, event: Any) -> None:
        if not raised:
            if any(c.name == "issue_refund" for c in event.get_function_calls()):
                raised.append(event)
                raise ConnectionError("the UI went away")
        elif not open_on_retry:
            with SqliteQuestionStore(path) as questions:
                open_on_retry.append(len(questions.open_questions()))

    question, report = serve_until_parked(
        lambda entry, announce, stop: serve(
            runner, entry, announce, concurrency=1, wait=0.05, stop=stop, stream=show
        ),
        path,
        {"thread_id": "order-1", "input": "refund o-77"},
    )
    assert raised, "the stream never saw the model's call"
    assert open_on_retry == [0]
    assert question.envelope.thread_id == "order-1"
    assert runs == []
    # The stopped run's call stays in the session, and the answer resumes the retry's once.
    answered = {"thread_id": "order-1", "question_id": question.envelope.question_id}
    handled = handle_message(
        runner, {**answered, "answer": {"action": "approve"}}, SqliteAnnounce(path)
    )
    assert handled.outcome is Outcome.RESUMED, handled.detail
    session = asyncio.run(
        runner.session_service.get_session(
            app_name=runner.app_name, user_id="agent-wait", session_id="order-1"
        )
    )
    assert session is not None
    calls = [c.name for e in session.events for c in e.get_function_calls()]
    assert calls.count("issue_refund") == 2
    assert runs == [("o-77", 5)]
    assert (report.acknowledged, report.retried, report.dead_lettered) == (1, 1, 0)
