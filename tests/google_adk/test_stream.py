"""stream_message and astream_message on ADK: the run's events as ADK yields them, the questions
published at the end."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService
from google.adk.tools import FunctionTool, ToolContext

from agent_wait.core import (
    Handled,
    MemoryAnnounce,
    Outcome,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
)
from agent_wait.google_adk import aserve, astream_message, handle_message, stream_message, wait
from agent_wait.host import ServeReport, answer
from tests.google_adk.conftest import runner_for
from tests.serving import until

CALL = [("issue_refund", {"order_id": "o-1", "amount": 30})]


def streamed(
    kind: str, runner: Runner, message: Any, inbox: MemoryAnnounce
) -> tuple[list[Any], Handled]:
    """``message`` through ``stream_message`` (sync) or ``astream_message`` (async): the events
    yielded, checked to come before anything is published, and the outcome."""
    before = len(inbox.envelopes)

    def look(event: Any) -> Any:
        assert len(inbox.envelopes) == before, "published while the run was still yielding"
        return event

    if kind == "sync":
        run = stream_message(runner, message, inbox)
        return [look(event) for event in run], run.handled

    async def collect() -> tuple[list[Any], Handled]:
        run = astream_message(runner, message, inbox)
        return [look(event) async for event in run], run.handled

    return asyncio.run(collect())


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_streamed_start_and_resume_yield_adks_events_and_publish_at_the_end(kind: str) -> None:
    runs: list[tuple[str, int]] = []

    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        runs.append((order_id, amount))
        return "ok"

    runner = runner_for([FunctionTool(issue_refund, require_confirmation=True)], CALL)
    inbox = MemoryAnnounce()

    seen, started = streamed(kind, runner, {"thread_id": "s-1", "input": "go"}, inbox)
    assert all(isinstance(e, Event) for e in seen)
    assert any(c.name == "adk_request_confirmation" for e in seen for c in e.get_function_calls())
    assert started.outcome is Outcome.STARTED
    [envelope] = inbox.envelopes
    assert started.question_ids == [envelope.question_id]

    approve = {"action": "approve"}
    answer = {"thread_id": "s-1", "question_id": envelope.question_id, "answer": approve}
    seen, resumed = streamed(kind, runner, answer, inbox)
    texts = [
        part.text
        for event in seen
        for part in (event.content.parts if event.content else None) or ()
        if part.text
    ]
    assert texts == ["done"]
    assert resumed.outcome is Outcome.RESUMED
    assert runs == [("o-1", 30)]

    seen, duplicate = streamed(kind, runner, answer, inbox)
    assert seen == []
    assert duplicate.outcome is Outcome.DUPLICATE
    assert runs == [("o-1", 30)]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_streamed_wait_tool_parks_and_resumes(kind: str) -> None:
    runs: list[int] = []

    @wait
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        runs.append(amount)
        return "ok"

    runner, inbox = runner_for([issue_refund], CALL), MemoryAnnounce()
    seen, _ = streamed(kind, runner, {"thread_id": "s-2", "input": "go"}, inbox)
    assert seen
    [envelope] = inbox.envelopes
    answer = {"thread_id": "s-2", "question_id": envelope.question_id}
    seen, resumed = streamed(kind, runner, {**answer, "answer": {"action": "approve"}}, inbox)
    assert seen
    assert resumed.outcome is Outcome.RESUMED, resumed.detail
    assert runs == [30]


def _gated() -> tuple[Runner, list[int]]:
    runs: list[int] = []

    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        runs.append(amount)
        return "ok"

    return runner_for([FunctionTool(issue_refund, require_confirmation=True)], CALL), runs


def _session_calls(runner: Runner, thread_id: str) -> list[str | None]:
    session = asyncio.run(
        runner.session_service.get_session(
            app_name=runner.app_name, user_id="agent-wait", session_id=thread_id
        )
    )
    assert session is not None
    return [c.name for e in session.events for c in e.get_function_calls()]


def test_the_sync_stream_advances_only_as_it_is_iterated() -> None:
    runner, _ = _gated()
    inbox = MemoryAnnounce()
    run = iter(stream_message(runner, {"thread_id": "s-4", "input": "go"}, inbox))
    first = next(run)
    assert [c.name for c in first.get_function_calls()] == ["issue_refund"]
    # ADK stored the model's call and waits: the tool has not asked for its confirmation yet.
    assert _session_calls(runner, "s-4") == ["issue_refund"]
    rest = list(run)
    assert any(c.name == "adk_request_confirmation" for e in rest for c in e.get_function_calls())
    assert len(inbox.envelopes) == 1


def test_a_sync_stream_stopped_early_closes_the_run_and_publishes_nothing() -> None:
    runner, _ = _gated()
    inbox = MemoryAnnounce()
    run = stream_message(runner, {"thread_id": "s-5", "input": "go"}, inbox)
    for _event in run:
        break
    assert inbox.envelopes == []
    with pytest.raises(RuntimeError, match="iterate the streamed run to its end"):
        _ = run.handled
    # Leaving the loop waited for the run to close on the runner's loop; the next one runs there.
    handled = handle_message(runner, {"thread_id": "s-6", "input": "go"}, inbox)
    assert handled.outcome is Outcome.STARTED, handled.detail
    assert len(inbox.envelopes) == 1


async def test_the_sync_stream_runs_inside_a_running_loop() -> None:
    runner, _ = _gated()
    inbox = MemoryAnnounce()
    run = stream_message(runner, {"thread_id": "s-7", "input": "go"}, inbox)
    assert list(run)
    assert run.handled.outcome is Outcome.STARTED


def test_aserve_streams_every_run_and_parks_and_resumes_on_the_running_loop(
    tmp_path: Path,
) -> None:
    runs: list[tuple[str, int]] = []
    events: list[tuple[str, Any]] = []

    def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        runs.append((order_id, amount))
        return "ok"

    async def show(thread_id: str, event: Any) -> None:
        events.append((thread_id, event))

    url = f"sqlite+aiosqlite:///{tmp_path / 'sessions.sqlite3'}"
    runner = runner_for(
        [FunctionTool(issue_refund, require_confirmation=True)], CALL, DatabaseSessionService(url)
    )
    path = tmp_path / "inbox.sqlite3"
    entry = SqliteEntry(path, poll_interval=0.02)
    entry.send({"thread_id": "s-3", "input": "refund o-1"})
    reports: list[ServeReport] = []
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()

    async def worker() -> None:
        reports.append(
            await aserve(runner, entry, SqliteAnnounce(path), wait=0.05, stop=stop, stream=show)
        )

    thread = threading.Thread(target=loop.run_until_complete, args=(worker(),))
    thread.start()
    try:
        with SqliteQuestionStore(path) as store:
            [question] = until(lambda: store.open_questions(), "the thread parked")
            answer(
                question.envelope.question_id,
                "approve",
                thread_id="s-3",
                by="bot",
                store=store,
                entry=entry,
            )
            until(lambda: runs, "the thread resumed")
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=60)
        loop.close()
        entry.close()
    assert runs == [("o-1", 30)]
    streamed = [event for thread_id, event in events if thread_id == "s-3"]
    calls = [c.name for e in streamed for c in e.get_function_calls()]
    assert "adk_request_confirmation" in calls, "the start was not streamed"
    responses = [r.name for e in streamed for r in e.get_function_responses()]
    assert responses.count("issue_refund") >= 1, "the resume was not streamed"
    [report] = reports
    assert (report.acknowledged, report.retried, report.dead_lettered) == (2, 0, 0)
